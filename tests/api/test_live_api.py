"""The API against the running app: daphne + Redis + a Celery worker, with real tokens over real HTTP."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from research.api import services as token_services
from research.jobs.models import JobEvent, JobStatus, ResearchJob

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _client(base: str, secret: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {secret}"}, timeout=30)


def _read_sse(client: httpx.Client, url: str, timeout: float = 180.0, **headers: str) -> list[dict[str, Any]]:
    """Read a whole event stream; returns the data objects, checking each frame's id matches its seq."""
    events: list[dict[str, Any]] = []
    frame: dict[str, str] = {}
    with client.stream("GET", url, headers=headers, timeout=httpx.Timeout(timeout, read=60)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line == "":
                if "data" in frame:
                    data = json.loads(frame["data"])
                    assert int(frame["id"]) == data["seq"] and frame["event"] == data["type"]
                    events.append(data)
                frame = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                frame[key] = value
    return events


def _wait_status(client: httpx.Client, job_id: int, statuses: set[str], timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/v1/jobs/{job_id}").json()
        if body["status"] in statuses:
            return body
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} stuck in {body['status']}")


def test_job_through_the_api_streams_events_and_serves_files(alice, charlie, worker, asgi_server, live_settings):
    _, secret = token_services.token_create(user=alice, name="script")
    _, outsider_secret = token_services.token_create(user=charlie, name="other")
    api = _client(asgi_server.url, secret)
    outsider = _client(asgi_server.url, outsider_secret)

    created = api.post("/api/v1/jobs", json={"question": "How have solar power costs changed?",
                                             "engine": "offline", "auto_accept": True, "max_steps": 2,
                                             "outputs": ["md"]})
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]

    # Live: the stream replays from the start and follows the job until it ends, with no gaps.
    events = _read_sse(api, f"/api/v1/jobs/{job_id}/events/stream?after=0")
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    types = [e["type"] for e in events]
    assert "plan.accepted" in types and "report.ready" in types and types[-1] in ("job.done", "job.status")
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.DONE and job.event_seq == seqs[-1]

    # Replay after a seq, by query and by Last-Event-ID.
    assert [e["seq"] for e in _read_sse(api, f"/api/v1/jobs/{job_id}/events/stream?after=5")] == seqs[5:]
    assert [e["seq"] for e in _read_sse(api, f"/api/v1/jobs/{job_id}/events/stream",
                                        **{"Last-Event-ID": "7"})] == seqs[7:]
    polled = api.get(f"/api/v1/jobs/{job_id}/events", params={"after": 3}).json()
    assert [e["seq"] for e in polled["events"]] == seqs[3:] and polled["status"] == "done"

    body = api.get(f"/api/v1/jobs/{job_id}").json()
    assert body["status"] == "done" and [s["status"] for s in body["steps"]] == ["done", "done"]
    assert body["report"]["markdown"] == job.report_versions.latest("number").markdown
    assert body["sources"] and body["plan"]["accepted"] is True
    md = next(a for a in body["artifacts"] if a["kind"] == "md")
    download = api.get(md["url"])
    assert download.status_code == 200
    assert download.content.decode() == body["report"]["markdown"]
    assert "attachment" in download.headers["content-disposition"]

    for method, url in [("GET", f"/api/v1/jobs/{job_id}"), ("GET", md["url"]),
                        ("GET", f"/api/v1/jobs/{job_id}/events"), ("GET", f"/api/v1/jobs/{job_id}/events/stream"),
                        ("POST", f"/api/v1/jobs/{job_id}/retry"), ("POST", f"/api/v1/jobs/{job_id}/cancel")]:
        assert outsider.request(method, url).status_code == 404, url
    assert httpx.get(asgi_server.url + f"/api/v1/jobs/{job_id}").status_code == 401
    assert httpx.get(asgi_server.url + "/api/v1/openapi.json").json()["info"]["title"] == "Deep Research API"


def test_plan_review_through_the_api_with_a_live_stream(alice, worker, asgi_server, live_settings):
    _, secret = token_services.token_create(user=alice, name="script")
    api = _client(asgi_server.url, secret)
    job_id = api.post("/api/v1/jobs", json={"question": "Why are heat pumps efficient?", "engine": "offline",
                                            "max_steps": 3}).json()["id"]
    waiting = _wait_status(api, job_id, {"awaiting_review", "failed"})
    assert waiting["status"] == "awaiting_review", waiting["error"]
    plan = waiting["plan"]
    steps = plan["plan"]["steps"][:1]
    edited = {"base_version": plan["version"], "action": "accept",
              "plan": {"title": "Only the first step", "steps": steps}}
    seen = ResearchJob.objects.get(pk=job_id).event_seq
    accepted = api.post(f"/api/v1/jobs/{job_id}/plan", json=edited)
    assert accepted.status_code == 200, accepted.text
    assert [s["id"] for s in accepted.json()["steps"]] == [steps[0]["id"]]
    # The stream starts after what we had seen and carries the rest of the job live.
    events = _read_sse(api, f"/api/v1/jobs/{job_id}/events/stream?after={seen}")
    assert [e["seq"] for e in events] == list(range(seen + 1, seen + 1 + len(events)))
    assert events[0]["type"] == "plan.updated" and "job.done" in [e["type"] for e in events]
    assert JobEvent.objects.filter(job_id=job_id).count() == events[-1]["seq"]
    final = api.get(f"/api/v1/jobs/{job_id}").json()
    assert final["status"] == "done" and final["plan"]["version"] == plan["version"] + 1
    assert [s["status"] for s in final["steps"]] == ["done"]
