"""Workers die and messages repeat: nothing is lost, nothing is done twice, attempts are capped.

Real parts: a Redis server, Celery worker processes (prefork) and beat, the model double over HTTP,
the test site for search and fetch, and the CLI contracts (`research --detach --json`, `job ID --json`,
`make worker`).
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import pytest

from research.jobs import services, tasks
from research.jobs.models import JobStatus, JobStep, ResearchJob, StepStatus
from tests.faults.stack import (
    QUESTION,
    Call,
    check_event_log,
    job_summary_when_ended,
    kill_worker,
    step_state,
    wait_job,
    wait_until,
)
from tests.support.fake_llm import Reply

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LLM_JOB = {"engine": "llm", "auto_accept": True, "outputs": ["md"]}


def test_worker_killed_mid_step_is_redone_once_by_another_worker(stack):
    """kill -9 a worker while it runs s1 (s2 already done); `make worker` finishes the job; s1 ran twice."""
    stack.beat()
    first = stack.worker(concurrency=2)
    stack.director.record_pids = True
    held = stack.director.gate("researcher", "s1")

    started = stack.manage("research", QUESTION, "--engine", "llm", "--auto-accept", "--max-steps", "2",
                           "--outputs", "md", "--detach", "--json")
    assert started.returncode == 0, started.stderr[-3000:]
    assert "starting one for this command" not in started.stderr  # the CLI found our worker
    job = ResearchJob.objects.get(pk=json.loads(started.stdout.strip().splitlines()[-1])["job"])

    held.wait_arrival()
    wait_until(lambda: step_state(job, "s2") == StepStatus.DONE, timeout=60, what="s2 done", stack=stack)
    assert step_state(job, "s1") == StepStatus.RUNNING
    doomed = first.pids()
    kill_worker(first, stack=stack)  # kill -9 of the whole worker: parent and pool children
    held.open()
    replacement = stack.make_worker(concurrency=2)

    summary = job_summary_when_ended(job, timeout=90, stack=stack)
    assert summary["status"] == "done", summary
    assert [s["status"] for s in summary["steps"]] == ["done", "done"]

    steps = {s.step_id: s for s in JobStep.objects.filter(job=job)}
    assert steps["s1"].attempts == 2 and steps["s2"].attempts == 1
    starts = stack.director.starts("s1")
    assert len(starts) == 2, "s1 must be redone exactly once"
    assert starts[0].pid in doomed and starts[1].pid in replacement.pids()
    assert len(stack.director.starts("s2")) == 1, "work finished before the kill is not redone"

    events = check_event_log(job)
    s1 = [e for e in events if e.payload.get("step") == "s1"]
    assert [e.payload["attempt"] for e in s1 if e.type == "step.started"] == [1, 2]
    requeued = [e for e in s1 if e.type == "step.requeued"]
    assert len(requeued) == 1 and "lease" in requeued[0].payload["reason"]
    assert [e.type for e in events].count("job.done") == 1


def _succeeded(worker, task_id: str) -> bool:
    return f"[{task_id}] succeeded" in worker.log.read_text(errors="replace")


def test_duplicate_deliveries_are_no_ops(stack, alice):
    """Each task delivered a second time (while its unit runs, and after the job ended) changes nothing."""
    stack.beat()
    worker = stack.worker(concurrency=4)
    planning = stack.director.gate("planner")
    researching = stack.director.gate("researcher", "s1")
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 1,
                                                                       "outputs": ["md", "pptx"]})

    planning.wait_arrival()  # the stage holds its lease: a second job_advance is a no-op
    dup = tasks.job_advance.delay(job.pk)
    wait_until(lambda: _succeeded(worker, dup.id), timeout=30, what="the duplicate advance", stack=stack)
    job.refresh_from_db()
    assert job.status == JobStatus.PLANNING and job.stage_attempts == 1
    planning.open()

    researching.wait_arrival()  # the step holds its lease: a second step_run is a no-op
    dup = tasks.step_run.delay(job.pk, "s1")
    wait_until(lambda: _succeeded(worker, dup.id), timeout=30, what="the duplicate step_run", stack=stack)
    step = JobStep.objects.get(job=job, step_id="s1")
    assert step.status == StepStatus.RUNNING and step.attempts == 1
    researching.open()

    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=90, stack=stack)
    assert job.status == JobStatus.DONE, job.error
    before = check_event_log(job)
    calls = len(stack.director.calls)
    art = job.artifacts.get(name="slides.pptx")

    dups = [tasks.job_advance.delay(job.pk), tasks.job_schedule.delay(job.pk), tasks.step_run.delay(job.pk, "s1"),
            tasks.render_output.delay(job.pk, "pptx"), tasks.step_run.delay(job.pk, "s1")]
    for task_id in [d.id for d in dups]:
        wait_until(lambda: _succeeded(worker, task_id), timeout=30, what=f"duplicate {task_id}",  # noqa: B023
                   stack=stack)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert check_event_log(job) == before
    assert len(stack.director.calls) == calls, "a duplicate called the model"
    assert JobStep.objects.get(job=job, step_id="s1").attempts == 1
    assert len(stack.director.starts("s1")) == 1
    assert job.artifacts.get(name="slides.pptx").sha256 == art.sha256
    assert job.renders.get(kind="pptx").attempts == 1


def test_step_that_kills_its_worker_every_time_is_capped(stack, alice, settings):
    """The process running s1 is SIGKILLed on each attempt: after STEP_MAX_ATTEMPTS the job fails, saying why."""
    stack.beat()
    worker = stack.worker(concurrency=2)
    killed: list[int] = []

    def kill_caller(call: Call, body: dict[str, Any]) -> Reply | None:
        if call.agent == "researcher" and call.step == "s1" and call.first:
            pid = stack.llm.caller_pid()
            assert pid is not None and pid in worker.children(), f"caller {pid} is not a pool process"
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
            return Reply(content="(the caller is gone)")
        return None

    stack.director.hooks.append(kill_caller)
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 1})
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=90, stack=stack)

    cap = settings.STEP_MAX_ATTEMPTS
    assert job.status == JobStatus.FAILED
    assert f"gave up after {cap} attempts" in job.error and "s1" in job.error
    step = JobStep.objects.get(job=job, step_id="s1")
    assert step.status == StepStatus.FAILED and step.attempts == cap
    assert "worker running it was lost" in step.error
    assert len(killed) == cap and len(set(killed)) == cap
    assert worker.running, "only the pool processes died; the worker itself lives on"
    events = check_event_log(job)
    assert [e.payload["attempt"] for e in events if e.type == "step.started"] == list(range(1, cap + 1))
    failed = [e for e in events if e.type == "step.failed"]
    assert len(failed) == 1 and f"gave up after {cap} attempts" in failed[0].payload["error"]
    assert events[-1].type == "job.failed" and "gave up" in events[-1].payload["error"]
