"""Redis restarts, the model server goes away, steps run over their time limit, users cancel mid-step."""

from __future__ import annotations

import time

import pytest

from research.jobs import services
from research.jobs.models import JobStatus, JobStep, LLMCall, StepStatus
from tests.faults.stack import (
    QUESTION,
    Gate,
    check_event_log,
    hard_restart_redis,
    step_state,
    wait_job,
    wait_until,
)
from tests.support.fake_llm import Reply

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LLM_JOB = {"engine": "llm", "auto_accept": True, "outputs": ["md"]}


def test_redis_restart_mid_job_loses_nothing(stack, alice):
    """Redis is killed and comes back empty while s1 runs and s2, s3 wait in its queue: the job still ends done."""
    worker = stack.worker(concurrency=1, STEP_QUEUE_GRACE_S=4)
    stack.beat()
    stack.director.plan([{"id": "s1"}, {"id": "s2"}, {"id": "s3"}])
    held = stack.director.gate("researcher", "s1")
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 3})
    held.wait_arrival()
    assert {step_state(job, s) for s in ("s2", "s3")} == {StepStatus.QUEUED}  # their messages sit in Redis

    def while_down() -> None:
        # s1 finishes while Redis is away: its "schedule" message cannot be sent.
        held.open()
        wait_until(lambda: step_state(job, "s1") == StepStatus.DONE, timeout=30, what="s1 done", stack=stack)
        wait_until(lambda: "could not queue research.jobs.tasks.job_schedule" in worker.log.read_text(),
                   timeout=30, what="the failed send of s1's schedule message", stack=stack)

    hard_restart_redis(stack.redis, down=while_down)
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=90, stack=stack)
    assert job.status == JobStatus.DONE, job.error

    assert list(job.steps.values_list("status", "attempts")) == [("done", 1)] * 3  # nothing ran twice
    assert all(len(stack.director.starts(s)) == 1 for s in ("s1", "s2", "s3"))
    check_event_log(job)
    assert "Connection to broker lost" in worker.log.read_text(errors="replace")


def test_model_server_down_30s_calls_retry_and_the_job_succeeds(stack, alice):
    stack.beat()
    worker = stack.worker(concurrency=2, LLM_MAX_RETRIES=12)  # backoff capped at 8 s: > 35 s of retries
    researching = stack.director.gate("researcher", "s1")
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 2})
    researching.wait_arrival()
    stack.llm.down()
    researching.open()
    down_at = time.monotonic()
    while time.monotonic() - down_at < 30:  # the outage: the job waits, it does not fail
        job.refresh_from_db()
        assert not job.is_terminal, job.error
        time.sleep(0.5)
    stack.llm.up()
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=90, stack=stack)
    assert job.status == JobStatus.DONE, job.error
    assert job.duration_s is not None and job.duration_s >= 30
    assert "LLM call failed" in worker.log.read_text(errors="replace")  # retries happened
    assert not LLMCall.objects.filter(job=job, ok=False).exists()  # and every call succeeded in the end
    assert list(job.steps.values_list("attempts", flat=True)) == [1, 1]
    check_event_log(job)


def test_model_server_down_past_the_retry_budget_fails_clearly(stack, alice):
    stack.beat()
    stack.worker(concurrency=2, LLM_MAX_RETRIES=2)
    researching = stack.director.gate("researcher", "s1")
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 2})
    researching.wait_arrival()
    stack.llm.down()
    researching.open()
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=60, stack=stack)
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("Every step failed.")
    assert "failed 3 times" in job.error and stack.llm.base_url in job.error
    for step in job.steps.all():
        assert step.status == StepStatus.FAILED and "failed 3 times" in step.error, step.error
        assert step.attempts == 1  # a model outage is a step failure, not a lost worker
    events = check_event_log(job)
    assert events[-1].type == "job.failed" and "failed 3 times" in events[-1].payload["error"]


def test_step_over_its_time_limit_fails_readably_and_the_plan_decides(stack, alice):
    """Soft limit 5 s. s2 hangs in a model call and s3 in a page fetch (the tool loop swallows the
    limit there; the next checkpoint re-raises it). s4 needs s2, so it is skipped; s1 carries the report.
    A second job whose only step hangs fails, saying why."""
    stack.beat()
    stack.worker(concurrency=4, CELERY_SOFT_TIME_LIMIT=5, CELERY_HARD_TIME_LIMIT=60)
    stack.director.plan([{"id": "s1"}, {"id": "s2"}, {"id": "s3"},
                         {"id": "s4", "step_type": "analysis", "depends_on": ["s2"]}], question="solar")
    stack.director.plan([{"id": "s1"}], question="wind")
    stack.director.gate("researcher", "s2", times=10)  # s2's model call never answers in time
    slow = f"{stack.env['SEARXNG_URL'].rstrip('/')}/slow?delay=20"

    def slow_fetch(call, body):
        if call.agent == "researcher" and call.step == "s3" and call.first:
            return Reply(tool_calls=[{"name": "fetch_page", "arguments": {"url": slow}}])
        return None

    def wind_hangs(call, body):
        if call.agent == "researcher" and "wind" in call.question and call.first:
            wind.hold()
        return None

    wind = Gate()
    stack.director.gates.append(wind)  # opened when the test ends
    stack.director.hooks[:0] = [slow_fetch, wind_hangs]

    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 4})
    lone = services.job_create(user=alice, question="How has wind power grown?", options={**LLM_JOB, "max_steps": 1})
    job = wait_job(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=90, stack=stack)
    lone = wait_job(lone, {JobStatus.DONE, JobStatus.FAILED}, timeout=60, stack=stack)

    assert job.status == JobStatus.DONE, job.error
    steps = {s.step_id: s for s in job.steps.all()}
    assert steps["s1"].status == StepStatus.DONE
    for sid in ("s2", "s3"):
        assert steps[sid].status == StepStatus.FAILED and steps[sid].error == "ran over its time limit (5 s)", (
            sid, steps[sid].error)
        assert steps[sid].attempts == 1
    assert steps["s4"].error == "skipped: it depends on step s2, which failed"
    events = check_event_log(job)
    failed = {e.payload["step"]: e.payload["error"] for e in events if e.type == "step.failed"}
    assert failed == {sid: steps[sid].error for sid in ("s2", "s3", "s4")}
    assert job.report_versions.exists()

    assert lone.status == JobStatus.FAILED
    assert lone.error == "Every step failed. s1: ran over its time limit (5 s)"
    check_event_log(lone)


def test_cancel_mid_step_stops_at_the_next_checkpoint(stack, alice):
    stack.beat()
    stack.worker(concurrency=4)
    stack.director.plan([{"id": "s1"}, {"id": "s2"}, {"id": "s3", "step_type": "analysis",
                                                      "depends_on": ["s1", "s2"]}])
    s1 = stack.director.gate("researcher", "s1")
    s2 = stack.director.gate("researcher", "s2")
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 3})
    s1.wait_arrival()
    s2.wait_arrival()
    services.job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.RESEARCHING and job.cancel_requested  # the running steps decide when
    s1.open()
    s2.open()
    job = wait_job(job, {JobStatus.CANCELLED, JobStatus.DONE, JobStatus.FAILED}, timeout=30, stack=stack)
    assert job.status == JobStatus.CANCELLED and job.error == "Cancelled by the user."
    assert dict(job.steps.values_list("step_id", "status")) == {"s1": "cancelled", "s2": "cancelled",
                                                                "s3": "cancelled"}
    # The round in flight finished; no step asked the model anything after it.
    assert [c.step for c in stack.director.calls if c.agent == "researcher"].count("s1") == 1
    assert [c.step for c in stack.director.calls if c.agent == "researcher"].count("s2") == 1
    assert not [c for c in stack.director.calls if c.agent == "reporter"]
    events = check_event_log(job)
    types = [e.type for e in events]
    cancelling = types.index("job.cancelling")
    assert {e.payload["step"] for e in events[cancelling:] if e.type == "step.cancelled"} == {"s1", "s2", "s3"}
    assert events[-2].type == "job.status" or events[-1].type == "job.status"
    assert events[-1].payload == {"status": "cancelled", "error": "Cancelled by the user."}
    assert not {"step.completed", "report.started", "job.done"} & set(types)


def test_cancel_while_planning_never_resurrects_the_job(stack, alice):
    stack.beat()
    stack.worker(concurrency=2)
    planning = stack.director.gate("planner")
    job = services.job_create(user=alice, question=QUESTION, options={**LLM_JOB, "max_steps": 2})
    planning.wait_arrival()
    services.job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    planning.open()
    wait_until(lambda: not job.__class__.objects.get(pk=job.pk).stage_lease_until, timeout=30,
               what="the planning stage to let go", stack=stack)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert not JobStep.objects.filter(job=job).exists() and not job.plan_versions.exists()
    events = check_event_log(job)
    assert events[-1].type == "job.status" and events[-1].payload["status"] == "cancelled"
