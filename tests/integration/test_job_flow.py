"""Whole jobs through a real Redis server, a real Celery worker process and real sockets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import websockets

from research.jobs import services
from research.jobs.models import JobStatus, JobStep, Source
from tests.integration.helpers import assert_event_log_complete, wait_for
from tests.support.citecheck import check_citations, report_sources

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_offline_job_runs_to_done_and_cites_only_fetched_sources(alice, worker, live_settings):
    job = services.job_create(user=alice, question="How have solar power costs changed?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 3})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    events = assert_event_log_complete(job)
    types = [e.type for e in events]
    for expected in ("plan.ready", "plan.accepted", "step.started", "source.added", "step.completed",
                     "report.ready", "job.done"):
        assert expected in types
    assert list(JobStep.objects.filter(job=job).values_list("status", flat=True)) == ["done"] * 3
    report = job.report_versions.get().markdown
    sources = report_sources(report, Source.objects.filter(job=job))
    assert "## References" in report
    assert check_citations(report, sources) == []
    md = job.artifacts.get(kind="md")
    assert Path(md.file.path).read_text() == report


def test_independent_steps_overlap_in_time(alice, worker, live_settings):
    job = services.job_create(user=alice, question="What is the outlook for heat pumps and batteries?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 3})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    spans = [(s.started_at, s.finished_at) for s in job.steps.all()]
    latest_start = max(start for start, _ in spans)
    earliest_end = min(end for _, end in spans)
    assert latest_start < earliest_end, "steps ran one at a time"


def test_plan_review_pauses_without_holding_a_worker(alice, worker, live_settings):
    job = services.job_create(user=alice, question="Why are heat pumps efficient?",
                              options={"engine": "offline", "max_steps": 2})
    job = wait_for(job, {JobStatus.AWAITING_REVIEW}, worker=worker)
    # Nothing holds the job while it waits. The stage's lease is released right after the status commits
    # (a separate statement), which PostgreSQL's real concurrency lets a reader see in between.
    deadline = time.monotonic() + 10
    while job.stage_lease_until is not None and time.monotonic() < deadline:
        time.sleep(0.1)
        job.refresh_from_db()
    assert job.stage_lease_until is None
    version = job.plan_versions.get()
    from research.agents.types import Plan

    plan = Plan.model_validate(version.plan)
    plan.steps = plan.steps[:1]
    services.plan_submit(job=job, plan=plan, base_version=version.number, action="accept")
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert list(job.steps.values_list("step_id", flat=True)) == [plan.steps[0].id]


def test_cancel_mid_job_stops_it(alice, worker, live_settings):
    job = services.job_create(user=alice, question="What are the obstacles for grid batteries?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 5})
    wait_for(job, {JobStatus.RESEARCHING, JobStatus.REPORTING, JobStatus.DONE}, worker=worker)
    services.job_cancel(job=job)
    job = wait_for(job, {JobStatus.CANCELLED, JobStatus.DONE}, worker=worker)
    events = assert_event_log_complete(job)
    if job.status == JobStatus.CANCELLED:  # it normally is; a very fast machine may finish first
        assert any(e.type == "job.status" and e.payload.get("status") == "cancelled" for e in events)
        assert not job.steps.filter(status__in=["queued", "running", "pending"]).exists()


def test_greeting_gets_a_direct_answer(alice, worker, live_settings):
    job = services.job_create(user=alice, question="hello", options={"engine": "offline"})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE and job.answer
    assert not job.plan_versions.exists()


def test_websocket_replays_then_streams_live(alice, worker, asgi_server, live_settings, client):
    """A real socket against daphne: subscribe after seq 1, get the rest in order with no gaps."""
    client.force_login(alice)
    cookie = client.cookies["sessionid"].value
    job = services.job_create(user=alice, question="How cheap are batteries now?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 2})

    async def watch() -> list[dict]:
        url = asgi_server.url.replace("http", "ws") + f"/ws/jobs/{job.pk}/"
        got: list[dict] = []
        async with websockets.connect(url, origin=asgi_server.url,
                                      additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:
            await ws.send(json.dumps({"type": "subscribe", "after": 1}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=120))
                got.append(msg)
                if msg["type"] in ("job.done", "job.failed"):
                    return got

    messages = asyncio.run(watch())
    assert [m["seq"] for m in messages] == list(range(2, len(messages) + 2))
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error


def test_websocket_refuses_outsider_and_bad_origin(alice, charlie, asgi_server, client):
    job = services.job_create(user=alice, question="q?", options={"engine": "offline"})
    client.force_login(charlie)
    cookie = client.cookies["sessionid"].value
    url = asgi_server.url.replace("http", "ws") + f"/ws/jobs/{job.pk}/"

    async def attempt(origin: str, cookie_value: str) -> int | None:
        try:
            async with websockets.connect(url, origin=origin,
                                          additional_headers={"Cookie": f"sessionid={cookie_value}"}) as ws:
                await ws.recv()
        except websockets.exceptions.InvalidStatus as exc:
            return exc.response.status_code
        except websockets.exceptions.ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else None
        return None

    assert asyncio.run(attempt(asgi_server.url, cookie)) in (403, 4403)  # refused at the handshake
    assert asyncio.run(attempt("http://evil.example", cookie)) == 403


def test_cli_research_json_contract(alice, worker, stack_env, tmp_path):
    """`manage.py research … --json` through the same Celery path; the last line is the JSON object."""
    result = subprocess.run(
        [sys.executable, "manage.py", "research", "How efficient are heat pumps?", "--engine", "offline",
         "--auto-accept", "--outputs", "md", "--max-steps", "2", "--json"],
        cwd=Path(__file__).resolve().parents[2], env=stack_env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["status"] == "done" and data["error"] is None
    assert Path(data["artifacts"]["md"]).is_file()
    show = subprocess.run([sys.executable, "manage.py", "job", str(data["job"]), "--json"],
                          cwd=Path(__file__).resolve().parents[2], env=stack_env, capture_output=True, text=True)
    summary = json.loads(show.stdout)
    assert summary["status"] == "done" and all(s["status"] == "done" for s in summary["steps"])
