"""Print how to sign in; on a fresh database, create an `admin` account with a random password."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from research.runtime import private_file, run_dir


class Command(BaseCommand):
    help = "Create the first admin account if there is none, and print how to sign in."

    def handle(self, *args: Any, **opts: Any) -> None:
        port = __import__("os").environ.get("PORT", "8000")
        secret_file = run_dir(settings.BASE_DIR) / "admin-password"
        if not User.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser("admin", "admin@localhost", password)
            private_file(secret_file)  # 0600 before the password is in it
            secret_file.write_text(password + "\n")
        self.stdout.write(f"Sign in at http://127.0.0.1:{port}/accounts/login/")
        if secret_file.exists():
            self.stdout.write(f"  user: admin   password: in {secret_file} (change it in /admin/)")
        if settings.SIGNUP_ENABLED:
            self.stdout.write(f"  or create an account at http://127.0.0.1:{port}/accounts/signup/ "
                              "(SIGNUP_ENABLED=0 turns sign-up off)")
