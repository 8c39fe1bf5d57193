"""Tokens (settings page, hashing, revoking) and the API routes through Django's test client."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.test import Client

from research.api import services as token_services
from research.api.models import ApiToken
from research.jobs import dispatch, services
from research.jobs.models import JobStatus, PlanVersion, ResearchJob

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)


def bearer(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def test_settings_page_creates_a_token_shown_once_and_stores_only_its_hash(alice_client, alice):
    response = alice_client.post("/settings/tokens/", {"name": "laptop"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    token = ApiToken.objects.get(owner=alice)
    start = html.index('id="new-token">') + len('id="new-token">')
    secret = html[start:html.index("</code>", start)]
    assert secret.startswith("drk_") and len(secret) > 40
    assert token.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in json.dumps(list(ApiToken.objects.values()), default=str)
    # Shown once: the page does not show it again.
    assert secret not in alice_client.get("/settings/tokens/").content.decode()
    assert Client().get("/api/v1/jobs", **bearer(secret)).status_code == 200


def test_revoked_token_is_refused_and_only_the_owner_can_revoke(alice_client, alice, charlie):
    token, secret = token_services.token_create(user=alice, name="ci")
    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.post(f"/settings/tokens/{token.pk}/revoke/").status_code == 404
    assert Client().get("/api/v1/jobs", **bearer(secret)).status_code == 200
    assert alice_client.post(f"/settings/tokens/{token.pk}/revoke/").status_code == 302
    assert Client().get("/api/v1/jobs", **bearer(secret)).status_code == 401


def test_token_page_needs_login_and_a_name():
    assert Client().get("/settings/tokens/").status_code == 302


def test_empty_token_name_is_a_clear_error(alice_client):
    response = alice_client.post("/settings/tokens/", {"name": "   "})
    assert response.status_code == 400
    assert ApiToken.objects.count() == 0


def test_no_or_bad_token_is_401_and_session_login_is_not_enough(alice_client):
    assert Client().get("/api/v1/jobs").status_code == 401
    assert Client().get("/api/v1/jobs", **bearer("drk_nope")).status_code == 401
    assert alice_client.get("/api/v1/jobs").status_code == 401  # a browser session is no API credential


def test_openapi_document_is_served_and_lists_the_routes():
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    for route in ("/api/v1/jobs", "/api/v1/jobs/{job_id}", "/api/v1/jobs/{job_id}/plan",
                  "/api/v1/jobs/{job_id}/events", "/api/v1/jobs/{job_id}/events/stream",
                  "/api/v1/jobs/{job_id}/files/{name}"):
        assert route in paths, route
    assert "bearer" in json.dumps(doc["components"]["securitySchemes"]).lower()
    create = paths["/api/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["$ref"].endswith("JobCreateIn")
    fields = doc["components"]["schemas"]["JobCreateIn"]["properties"]
    assert {"question", "style", "locale", "max_steps", "outputs", "auto_accept", "engine", "kb", "web",
            "background"} <= set(fields)


def test_create_read_and_outsider_404(alice, charlie):
    _, secret = token_services.token_create(user=alice, name="a")
    _, outsider = token_services.token_create(user=charlie, name="c")
    client = Client()
    response = client.post("/api/v1/jobs", {"question": "Why are heat pumps efficient?", "outputs": ["md", "pdf"],
                                            "engine": "offline", "max_steps": 3}, content_type="application/json",
                           **bearer(secret))
    assert response.status_code == 201, response.content
    job = response.json()
    assert job["status"] == JobStatus.QUEUED and job["options"]["outputs"] == ["md", "pdf"]
    assert job["outputs"] == {"pdf": {"status": "pending", "error": None}}
    assert client.get(f"/api/v1/jobs/{job['id']}", **bearer(secret)).json()["question"].startswith("Why")
    for url in (f"/api/v1/jobs/{job['id']}", f"/api/v1/jobs/{job['id']}/events",
                f"/api/v1/jobs/{job['id']}/events/stream", f"/api/v1/jobs/{job['id']}/files/report.md"):
        assert client.get(url, **bearer(outsider)).status_code == 404, url
    assert client.post(f"/api/v1/jobs/{job['id']}/cancel", **bearer(outsider)).status_code == 404
    assert client.get("/api/v1/jobs", **bearer(outsider)).json() == []


def test_bad_job_input_is_a_clear_422_or_400(alice):
    """What the schema can say is checked by the schema (422 naming the field); a rule across fields is 400."""
    _, secret = token_services.token_create(user=alice, name="a")
    client = Client()

    def post(body):
        return client.post("/api/v1/jobs", body, content_type="application/json", **bearer(secret))

    r = post({"question": "   "})
    assert r.status_code == 422 and r.json()["detail"] == "question: must not be blank or contain a NUL character"
    assert r.json()["errors"] and all(isinstance(e, str) for e in r.json()["errors"])
    assert post({"question": "x", "outputs": ["docx"]}).status_code == 422  # not one of the schema's outputs
    r = post({"question": "x", "max_steps": 999})
    assert r.status_code == 422 and "max_steps" in r.json()["detail"]
    assert post({"question": "a\u0000b"}).status_code == 422  # PostgreSQL cannot store NUL
    r = post({"question": "x", "web": False})
    assert r.status_code == 400 and "knowledge base" in r.json()["detail"]


def _awaiting_review(user):
    from research.agents.types import Plan, PlanStep

    job = services.job_create(user=user, question="Heat pumps?", options={"engine": "offline", "max_steps": 3})
    plan = Plan(locale="en-US", title="Heat pumps", thought="",
                steps=[PlanStep(id="a", title="Costs", description="", step_type="research", need_search=True),
                       PlanStep(id="b", title="Efficiency", description="", step_type="research",
                                need_search=True)])
    services.plan_version_create(job=job, plan=plan, author="planner")
    # Test setup: put the job where the planner leaves it (the state machine guards real moves).
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.AWAITING_REVIEW)
    return job


def test_plan_edit_uses_the_web_forms_rules(alice):
    _, secret = token_services.token_create(user=alice, name="a")
    job = _awaiting_review(alice)
    client = Client()
    url = f"/api/v1/jobs/{job.pk}/plan"
    bad = {"base_version": 1, "action": "accept",
           "plan": {"title": "T", "steps": [{"id": "a", "title": "A", "depends_on": ["zzz"]}]}}
    r = client.post(url, bad, content_type="application/json", **bearer(secret))
    assert r.status_code == 400 and "There is no step zzz" in r.json()["detail"]
    dup = {"base_version": 1, "plan": {"title": "T", "steps": [{"id": "a", "title": "A"}, {"id": "a", "title": "B"}]}}
    r = client.post(url, dup, content_type="application/json", **bearer(secret))
    assert r.status_code == 400 and "unique" in r.json()["detail"]
    stale = {"base_version": 7, "action": "accept"}
    assert client.post(url, stale, content_type="application/json", **bearer(secret)).status_code == 409
    good = {"base_version": 1, "action": "accept",
            "plan": {"title": "Edited", "steps": [{"id": "a", "title": "Costs only"}]}}
    r = client.post(url, good, content_type="application/json", **bearer(secret))
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["status"] == JobStatus.RESEARCHING
    assert [s["title"] for s in body["steps"]] == ["Costs only"]
    assert PlanVersion.objects.get(job=job, number=2).author == "user"
    assert client.post(url, good, content_type="application/json", **bearer(secret)).status_code == 409


def test_api_requests_are_rate_limited(alice, settings):
    from django.core.cache import caches

    cache = caches["ratelimit"]

    settings.API_RATE = "3/m"
    cache.clear()
    try:
        _, secret = token_services.token_create(user=alice, name="a")
        responses = [Client().get("/api/v1/jobs", **bearer(secret)) for _ in range(5)]
    finally:
        cache.clear()
    assert [r.status_code for r in responses] == [200, 200, 200, 429, 429]
    assert 0 < int(responses[-1]["Retry-After"]) <= 60


def test_the_job_creation_limit_answers_429_with_retry_after(alice, settings):
    """docs/api.md promised Retry-After on every 429; the job-creation limit sent none."""
    settings.JOB_CREATE_RATE = "1/h"
    _, secret = token_services.token_create(user=alice, name="a")

    def post():
        return Client().post("/api/v1/jobs", {"question": "Heat pumps?", "engine": "offline"},
                             content_type="application/json", **bearer(secret))

    assert post().status_code == 201
    refused = post()
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 3600
    assert "jobs per" in refused.json()["detail"]


def test_no_token_is_401_with_a_bearer_challenge_and_the_json_error_shape():
    r = Client().get("/api/v1/jobs")
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Bearer"
    assert r.json() == {"detail": "Send a valid API token: Authorization: Bearer TOKEN.", "errors": []}
    # A URL no route matches, under /api/: the same JSON shape, not the HTML page.
    r = Client().get("/api/v1/no-such-route")
    assert r.status_code == 404 and r.json()["errors"] == []


def test_the_openapi_document_lists_every_status_with_retry_after_on_429():
    doc = Client().get("/api/v1/openapi.json").json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            codes = set(op["responses"])
            assert {"401", "422", "429"} <= codes, (method, path, codes)
            if "{job_id}" in path:
                assert "404" in codes, (method, path)
            if method == "post" and "{job_id}" in path:
                assert {"400", "409"} <= codes, (method, path)
            assert "Retry-After" in op["responses"]["429"]["headers"]
            assert "WWW-Authenticate" in op["responses"]["401"]["headers"]

