"""Pages: sign-up, the job form, the job page, downloads, CSRF and headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from research.jobs import dispatch, services
from research.jobs.artifacts import artifact_save_bytes
from research.jobs.models import JobStatus, ResearchJob


@pytest.fixture(autouse=True)
def _no_enqueue(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)


def test_signup_then_job_list(db, client):
    response = client.post("/accounts/signup/", {"username": "dora", "password": "a-long-pass-phrase"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_signup_can_be_turned_off(db, client, settings):
    settings.SIGNUP_ENABLED = False
    assert client.get("/accounts/signup/").status_code == 404


def test_new_job_form_creates_job_and_redirects(alice_client):
    response = alice_client.post("/jobs/new/", {
        "question": "What limits grid battery storage?", "style": "academic", "locale": "auto",
        "max_steps": 3, "outputs": ["pdf", "pptx"], "engine": "offline", "web": "on",
    })
    job = ResearchJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.options["outputs"] == ["md", "pdf", "pptx"]
    page = alice_client.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    assert "What limits grid battery storage?" in page.content.decode()


def test_new_job_form_shows_clear_errors(alice_client):
    response = alice_client.post("/jobs/new/", {"question": "", "style": "academic", "locale": "auto",
                                                "max_steps": 99, "engine": "offline"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "This field is required" in body
    assert "less than or equal to" in body
    assert not ResearchJob.objects.exists()


def test_csrf_is_enforced_on_post(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post("/jobs/new/", {"question": "x?", "style": "academic"})
    assert response.status_code == 403


def test_security_headers(alice_client):
    response = alice_client.get("/")
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"


def test_download_is_an_attachment_with_nosniff(alice, alice_client):
    job = services.job_create(user=alice, question="q?", options={})
    artifact_save_bytes(job=job, kind="md", name="report.md", data=b"# Report\n")
    response = alice_client.get(f"/jobs/{job.pk}/files/report.md")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert b"".join(response.streaming_content) == b"# Report\n"


def test_download_paths_cannot_be_traversed(alice, alice_client):
    job = services.job_create(user=alice, question="q?", options={})
    secret = Path(settings.MEDIA_ROOT) / "secret.txt"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("top secret")
    for path in ("../secret.txt", "..%2Fsecret.txt", "%2e%2e/secret.txt", "/etc/passwd", "../../../etc/passwd"):
        response = alice_client.get(f"/jobs/{job.pk}/files/{path}")
        assert response.status_code == 404, path


def test_failed_job_page_shows_the_failure(alice, alice_client):
    job = services.job_create(user=alice, question="q?", options={})
    services.job_set_status(job=job, status=JobStatus.FAILED, error="planner failed: the model returned garbage")
    body = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "planner failed: the model returned garbage" in body
    assert 'id="retry-job"' in body


def test_offline_engine_is_labelled(alice, alice_client):
    job = services.job_create(user=alice, question="q?", options={"engine": "offline"})
    body = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "offline engine" in body


def test_language_switches_to_chinese(alice_client):
    response = alice_client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 200
    assert '<html lang="zh-hans">' in response.content.decode()
