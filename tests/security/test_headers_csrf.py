"""Security headers on every kind of response, CSRF on every POST, and the job-creation rate limit."""

from __future__ import annotations

import pytest
from django.test import Client

from research.jobs import dispatch
from research.jobs.models import ResearchJob
from tests.support.urls import fill_route, url_routes

pytestmark = pytest.mark.django_db


# Every URL in the URLconf, public ones included (a login or sign-up form without CSRF is a login-CSRF hole).
URLS = [*url_routes(), ("admin/login/", "admin:login")]


def test_every_url_is_covered():
    names = {name for _route, name in URLS}
    assert {"login", "logout", "signup", "job_new", "job_plan", "job_cancel", "job_delete", "job_report_edit",
            "knowledge:document_upload", "set_language", "admin:login"} <= names


@pytest.mark.parametrize(("route", "name"), URLS, ids=[n for _r, n in URLS])
def test_post_without_csrf_token_is_refused(alice, alice_objects, route, name):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = fill_route(route, alice_objects)
    response = client.post(url, {"question": "x?", "op": "accept", "kind": "pdf", "markdown": "# x"})
    if name.startswith("api-v1:"):
        # The JSON API takes bearer tokens only: a browser's session cookie is no credential there, so a
        # forged cross-site post carries nothing the API accepts.
        assert response.status_code in (401, 403, 405), (name, response.status_code)
        return
    assert response.status_code == 403, (name, response.status_code)

    client.get("/accounts/login/")  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    response = client.post(url, {"question": "x?", "op": "accept", "kind": "pdf", "markdown": "# x"},
                           HTTP_X_CSRFTOKEN=token)
    assert response.status_code != 403, (name, "refused even with a token")


def _assert_security_headers(response) -> None:
    csp = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";") if part.strip())
    assert directives["default-src"] == "'self'"
    assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in directives["script-src"]
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_security_headers_on_pages_errors_and_downloads(alice_client, alice_objects, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "jobs" / str(alice_objects["job_id"])).mkdir(parents=True)
    (tmp_path / "jobs" / str(alice_objects["job_id"]) / "report.md").write_text("# Report\n")
    job = alice_objects["job_id"]
    for url in ("/", "/jobs/new/", f"/jobs/{job}/", f"/jobs/{job}/events/", "/kb/", "/jobs/999999/",
                f"/jobs/{job}/files/report.md"):
        response = alice_client.get(url)
        assert response.status_code in (200, 404), (url, response.status_code)
        _assert_security_headers(response)
    _assert_security_headers(Client().get("/accounts/login/"))


def test_job_creation_is_rate_limited_per_user_with_429(alice_client, alice, bob, settings, monkeypatch):
    settings.JOB_CREATE_RATE = "2/h"
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    form = {"question": "How do heat pumps work?", "style": "academic", "locale": "auto", "max_steps": 3,
            "engine": "offline", "web": "on"}
    assert [alice_client.post("/jobs/new/", form).status_code for _ in range(2)] == [302, 302]
    refused = alice_client.post("/jobs/new/", form)
    assert refused.status_code == 429
    assert b"2 jobs per 60 minutes" in refused.content
    assert ResearchJob.objects.filter(owner=alice).count() == 2
    other = Client()
    other.force_login(bob)  # the limit is per user
    assert other.post("/jobs/new/", form).status_code == 302
