"""Depth and runs through every entry point that creates or accepts a job: the API (create, plan submit),
the MCP tool's options, the new-job form and the plan review form (each refuses what depth_clean refuses)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from pydantic import ValidationError

from research.agents.types import Plan, PlanStep
from research.api import services as token_services
from research.api.mcp_server import ResearchOptions
from research.jobs import dispatch, services
from research.jobs.models import JobStatus, ResearchJob
from tests.support.jobs import TO_REVIEW, job_walk

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)


def api(alice) -> tuple[Client, dict[str, str]]:
    _token, secret = token_services.token_create(user=alice, name="t")
    return Client(), {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def test_api_creates_heavy_jobs_and_refuses_bad_runs(alice):
    client, auth = api(alice)
    made = client.post("/api/v1/jobs", json.dumps({"question": "q", "depth": "heavy", "runs": 2, "web": True}),
                       content_type="application/json", **auth)
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["options"]["depth"] == "heavy" and body["options"]["runs"] == 2
    for bad in ({"depth": "heavy", "runs": 6}, {"depth": "deep"}, {"depth": "heavy", "runs": 0}):
        refused = client.post("/api/v1/jobs", json.dumps({"question": "q", **bad}), content_type="application/json",
                              **auth)
        assert refused.status_code in (400, 422), (bad, refused.content)
    assert ResearchJob.objects.count() == 1


def test_api_plan_submit_can_switch_to_heavy(alice):
    client, auth = api(alice)
    job = services.job_create(user=alice, question="q", options={"engine": "offline"})
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(job=job, plan=Plan(title="P", steps=[PlanStep(id="a", title="A")]),
                                           author="planner")
    answer = client.post(f"/api/v1/jobs/{job.pk}/plan",
                         json.dumps({"base_version": version.number, "depth": "heavy", "runs": 4}),
                         content_type="application/json", **auth)
    assert answer.status_code == 200, answer.content
    job.refresh_from_db()
    assert job.status == JobStatus.RESEARCHING and job.options["depth"] == "heavy" and job.options["runs"] == 4


def test_mcp_options_carry_depth_and_runs():
    options = ResearchOptions(depth="heavy", runs=3)
    assert options.model_dump(exclude={"wait_s"}, exclude_none=True)["depth"] == "heavy"
    with pytest.raises(ValidationError):
        ResearchOptions(depth="heavy", runs=6)
    with pytest.raises(ValidationError):
        ResearchOptions(depth="deeper")


def test_new_job_form_takes_depth_and_runs(alice_client):
    page = alice_client.get("/jobs/new/").content.decode()
    assert 'name="depth"' in page and 'name="runs"' in page
    made = alice_client.post("/jobs/new/", {"question": "What limits heat pumps?", "style": "academic",
                                            "locale": "auto", "max_steps": 2, "engine": "offline",
                                            "depth": "heavy", "runs": 2, "web": "on"})
    assert made.status_code == 302
    job = ResearchJob.objects.get()
    assert job.options["depth"] == "heavy" and job.options["runs"] == 2
    refused = alice_client.post("/jobs/new/", {"question": "q", "style": "academic", "locale": "auto",
                                               "max_steps": 2, "engine": "offline", "depth": "heavy", "runs": 9,
                                               "web": "on"})
    assert refused.status_code == 400 and ResearchJob.objects.count() == 1


def test_plan_review_form_shows_and_applies_depth(alice_client, alice):
    job = services.job_create(user=alice, question="q", options={"engine": "offline"})
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(job=job, plan=Plan(title="P", steps=[PlanStep(id="a", title="A")]),
                                           author="planner")
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="plan-depth"' in page and 'name="runs"' in page
    post = {"form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "1", "form-0-id": "a", "form-0-title": "A",
            "form-0-description": "", "form-0-step_type": "research", "form-0-need_search": "on",
            "form-0-depends_on": "", "base_version": str(version.number), "title": "P", "op": "accept",
            "depth": "heavy", "runs": "5"}
    assert alice_client.post(f"/jobs/{job.pk}/plan/", post).status_code == 302
    job.refresh_from_db()
    assert job.status == JobStatus.RESEARCHING and job.options["depth"] == "heavy" and job.options["runs"] == 5
