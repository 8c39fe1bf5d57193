"""Heavy mode through a real Redis server and a real Celery worker process (PostgreSQL with
TEST_DATABASE=postgres): k runs per research step as separate units that overlap in time, a synthesized
finding per step, a report, and the CLI contracts (`research --depth heavy --runs K`, `job ID --json`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from research.jobs import services
from research.jobs.models import JobStatus, JobStep, Source, StepRun, StepStatus
from research.report.citations import citation_numbers
from tests.integration.helpers import assert_event_log_complete, wait_for
from tests.support.citecheck import check_citations, report_sources

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_heavy_offline_job_runs_k_parallel_runs_per_step_and_synthesizes(alice, worker, live_settings):
    job = services.job_create(user=alice, question="What limits grid-scale battery storage?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 2,
                                       "depth": "heavy", "runs": 3})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=240, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    events = assert_event_log_complete(job)
    steps = list(JobStep.objects.filter(job=job).order_by("position"))
    assert [s.status for s in steps] == [StepStatus.DONE] * 2
    registered = set(Source.objects.filter(job=job).values_list("number", flat=True))
    for step in steps:
        runs = list(StepRun.objects.filter(step=step).order_by("index"))
        assert [r.status for r in runs] == [StepStatus.DONE] * 3
        # Separate units, each claimed once under its own lease token.
        assert [r.attempts for r in runs] == [1, 1, 1] and len({r.lease_token for r in runs}) == 3
        # The finding came after every run and cites only sources the job registered.
        assert step.finished_at >= max(r.finished_at for r in runs)
        assert step.result["notes"]["synthesis"] and step.result["notes"]["runs_done"] == [0, 1, 2]
        cited = citation_numbers(step.result_md)
        assert cited and set(cited) <= registered
        queries = {e.payload["query"] for e in events if e.type == "step.activity"
                   and e.payload.get("kind") == "search" and e.payload.get("step") == step.step_id}
        assert len(queries) >= 3, "the runs searched the same thing"
        mine = [e for e in events if e.payload.get("step") == step.step_id]
        assert sorted(e.payload["run"] for e in mine if e.type == "run.completed") == [0, 1, 2]
        types = [e.type for e in mine]
        assert types.index("step.synthesizing") > max(i for i, t in enumerate(types) if t == "run.completed")
    report = job.report_versions.get().markdown
    assert check_citations(report, report_sources(report, Source.objects.filter(job=job))) == []


def test_cli_heavy_job_and_job_json_list_each_steps_runs(worker, stack_env, live_settings):
    done = subprocess.run(
        [sys.executable, "manage.py", "research", "How have solar power costs changed?", "--engine", "offline",
         "--auto-accept", "--max-steps", "1", "--depth", "heavy", "--runs", "2", "--json"],
        env=stack_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    job_id = json.loads(done.stdout.strip().splitlines()[-1])["job"]
    shown = subprocess.run([sys.executable, "manage.py", "job", str(job_id), "--json"], env=stack_env,
                           capture_output=True, text=True, timeout=60)
    summary = json.loads(shown.stdout)
    assert summary["status"] == "done" and summary["depth"] == "heavy"
    runs = summary["steps"][0]["runs"]
    assert [(r["index"], r["status"]) for r in runs] == [(0, "done"), (1, "done")]
    assert all(r["emphasis"] and r["sources"] > 0 for r in runs)

    bad = subprocess.run([sys.executable, "manage.py", "research", "q", "--engine", "offline", "--depth", "heavy",
                          "--runs", "9", "--json"], env=stack_env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "Runs must be between 1 and 5" in bad.stderr
