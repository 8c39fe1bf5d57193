"""`manage.py check --deploy` is clean with production settings, and production never runs on a dev key."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _production_env(**extra: str) -> dict[str, str]:
    # A deployment's environment: none of the test run's knobs (e2e tests set DJANGO_ALLOW_ASYNC_UNSAFE).
    env = {k: v for k, v in os.environ.items()
           if k not in ("SECRET_KEY", "DEBUG", "DEV_MODE", "TEST_DB_NAME", "DJANGO_SETTINGS_MODULE",
                        "DJANGO_ALLOW_ASYNC_UNSAFE", "RATELIMIT_CACHE_URL")}
    env.update({"DEBUG": "0", "SECURE_PRODUCTION": "1", "ALLOWED_HOSTS": "research.example.com",
                "DJANGO_SETTINGS_MODULE": "research.settings"})
    env.update(extra)
    return env


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_check_deploy_is_clean_with_production_settings():
    result = _check(_production_env(SECRET_KEY=secrets.token_urlsafe(50)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_flags_login_throttling_on_a_per_process_counter():
    """Counting failed logins in one process's memory lets each web process grant its own quota."""
    result = _check(_production_env(SECRET_KEY=secrets.token_urlsafe(50), RATELIMIT_CACHE_URL="locmem://"))
    assert result.returncode != 0 and "axes.W001" in result.stdout + result.stderr


def test_production_without_a_secret_key_refuses_to_start():
    result = _check(_production_env())
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_the_dev_key_is_flagged_by_the_deploy_check():
    env = _production_env()
    del env["SECURE_PRODUCTION"]  # a dev setup: the fallback key is used ...
    result = _check(env)
    assert result.returncode != 0 and "security.W009" in result.stdout + result.stderr  # ... and called insecure


def test_ci_runs_the_deploy_check():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test:.*?\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe and "check-deploy" in recipe.group(1)
    target = re.search(r"^check-deploy:.*?\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert target and "check --deploy --fail-level WARNING" in target.group(1)
    assert "SECURE_PRODUCTION=1" in target.group(1) and "DEBUG=0" in target.group(1)
