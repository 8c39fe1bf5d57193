"""One user across CLI and web: `research` and `kb add` resolve the same owner (--user, else the first admin)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management.base import CommandError
from django.test import Client

from research.jobs.management.commands.research import cli_user
from research.knowledge.management.commands.kb import resolve_user


def test_default_is_the_first_admin_for_both_commands(db):
    User.objects.create(username="zed")
    admin = User.objects.create(username="boss", is_superuser=True, is_staff=True)
    User.objects.create(username="late-admin", is_superuser=True)
    assert cli_user(None) == admin == resolve_user(None)


def test_named_user_and_unknown_user(db, alice):
    assert cli_user("alice") == alice
    with pytest.raises(CommandError, match="nobody"):
        cli_user("nobody")


def test_fresh_machine_without_users_still_runs(db):
    assert cli_user(None).username == "cli"


def test_cli_job_shows_up_for_its_user_in_the_web(db, alice, alice_client, charlie, monkeypatch):
    from research.jobs import dispatch, services

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=cli_user("alice"), question="What is new in batteries?", options={})
    assert "What is new in batteries?" in alice_client.get("/").content.decode()
    assert alice_client.get(f"/jobs/{job.pk}/").status_code == 200
    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.get(f"/jobs/{job.pk}/").status_code == 404
