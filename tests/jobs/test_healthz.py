"""/healthz: public, plain, and honest about the database."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection


@pytest.mark.django_db
def test_healthz_is_public_and_ok(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.content == b"ok\n"


@pytest.mark.django_db
def test_healthz_fails_when_the_database_is_unreachable(client, monkeypatch):
    def refuse() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "ensure_connection", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503


@pytest.mark.django_db
def test_healthz_is_exempt_from_the_https_redirect_in_production(settings, client):
    """Container health checks speak plain HTTP on loopback; everything else is sent to HTTPS."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "research.settings", "DEBUG": "0", "SECURE_PRODUCTION": "1"}
    code = "import django, json; django.setup(); from django.conf import settings as s; " \
           "print(json.dumps([s.SECURE_SSL_REDIRECT, s.SECURE_REDIRECT_EXEMPT]))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    redirect, exempt = json.loads(done.stdout.strip().splitlines()[-1])
    assert redirect is True
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = exempt
    assert client.get("/healthz").status_code == 200
    assert client.get("/accounts/login/").status_code == 301
