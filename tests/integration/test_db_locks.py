"""Claims under real row locks: many threads (each with its own DB connection) race for one unit of work.

`make test` runs this package on PostgreSQL, where production runs; there the claim's UPDATE / SELECT ...
FOR UPDATE serialize the racers on the job row. Exactly one may win.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections, transaction

from research.jobs import dispatch, services
from research.jobs.models import JobStatus, JobStep, ResearchJob, StepStatus
from research.jobs.units import stages, steps

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
RACERS = 8


def race(fn: Callable[[], Any]) -> list[Any]:
    """Run fn in RACERS threads released together; return every result (or exception)."""
    barrier = threading.Barrier(RACERS)
    results: list[Any] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        try:
            out = fn()
        except Exception as exc:  # reported to the test
            out = exc
        finally:
            connections.close_all()
        with lock:
            results.append(out)

    threads = [threading.Thread(target=run) for _ in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == RACERS
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    return results


@pytest.fixture
def job(alice, monkeypatch, redis_server) -> ResearchJob:
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="How do heat pumps work?", options={})
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.RESEARCHING)
    JobStep.objects.create(job=job, step_id="s1", position=0, title="Background")
    return job


def test_the_suite_runs_on_postgresql_when_asked():
    if os.environ.get("TEST_DATABASE") == "postgres":
        assert connection.vendor == "postgresql"


def test_one_of_many_racing_workers_claims_a_step(job):
    results = race(lambda: steps.step_claim(job.pk, "s1"))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1, results
    step = JobStep.objects.get(job=job, step_id="s1")
    assert step.status == StepStatus.RUNNING and step.attempts == 1
    assert step.lease_token == winners[0][2]
    assert job.events.filter(type="step.started").count() == 1


def test_one_of_many_racing_workers_claims_a_stage(job):
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.PLANNING)
    results = race(lambda: stages.stage_claim(job.pk))
    assert len([r for r in results if r is not None]) == 1, results
    assert ResearchJob.objects.get(pk=job.pk).stage_attempts == 1


def test_select_for_update_holds_the_row_until_commit(job):
    """A second transaction cannot take the job row while the first holds it (NOWAIT fails at once)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no row locks (it locks the whole file); run with TEST_DATABASE=postgres")
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        try:
            with transaction.atomic():
                ResearchJob.objects.select_for_update().get(pk=job.pk)
                held.set()
                release.wait(30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(DatabaseError), transaction.atomic():
            ResearchJob.objects.select_for_update(nowait=True).get(pk=job.pk)
    finally:
        release.set()
        thread.join(30)
    with transaction.atomic():  # released with the holder's commit
        assert ResearchJob.objects.select_for_update(nowait=True).get(pk=job.pk).pk == job.pk


def _row_locks(sql: str) -> set[str]:
    """The tables whose rows this statement locks (an UPDATE, or a SELECT ... FOR UPDATE)."""
    head = sql.lstrip().upper()
    tables = {"jobs_researchjob", "jobs_jobstep", "jobs_steprun", "jobs_outputrender", "jobs_followup"}
    if head.startswith("UPDATE"):
        return {t for t in tables if head.startswith(f'UPDATE "{t.upper()}"')}
    if head.startswith("SELECT") and "FOR UPDATE" in head:
        return {t for t in tables if f'FROM "{t.upper()}"' in head}
    return set()


def _first_locks(call: Callable[[], Any]) -> list[str]:
    """The tables `call` locks rows of, in the order it first locks each."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        call()
    order: list[str] = []
    for query in captured.captured_queries:
        order += sorted(t for t in _row_locks(query["sql"]) if t not in order)
    return order


def test_every_move_of_the_lease_protocol_locks_the_job_row_first(job):
    """Claims, ends and the reaper's hand-offs of steps and runs lock the job row before a unit's rows, as the
    scheduler and event_emit do: the one order that cannot deadlock (the reaper's step hand-off used to lock
    the step first and then, through event_emit, the job, while step_finish took them the other way)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no row locks (it locks the whole file); run with TEST_DATABASE=postgres")
    from datetime import timedelta

    from django.utils import timezone

    from research.jobs.models import StepRun
    from research.jobs.units import runs

    step = JobStep.objects.get(job=job, step_id="s1")
    run = StepRun.objects.create(step=step, job=job, index=0, status=StepStatus.QUEUED)
    moves: list[tuple[str, Callable[[], Any]]] = []
    claimed_step: list[Any] = []
    claimed_run: list[Any] = []
    moves += [("step claim", lambda: claimed_step.append(steps.step_claim(job.pk, "s1"))),
              ("step finish", lambda: steps.step_finish(job.pk, claimed_step[0][1], claimed_step[0][2],
                                                        status=StepStatus.FAILED, error="x"))]
    moves += [("run claim", lambda: claimed_run.append(runs.run_claim(job.pk, "s1", 0))),
              ("run finish", lambda: runs.run_finish(job.pk, claimed_run[0][2], claimed_run[0][3],
                                                     status=StepStatus.FAILED, error="x"))]
    for name, call in moves:
        order = _first_locks(call)
        assert order and order[0] == "jobs_researchjob", (name, order)
    for model, pk, requeue in ((JobStep, step.pk, steps.steps_requeue_stale),
                               (StepRun, run.pk, runs.runs_requeue_stale)):
        model.objects.filter(pk=pk).update(status=StepStatus.RUNNING, lease_until=timezone.now() - timedelta(seconds=1))
        order = _first_locks(lambda requeue=requeue: requeue(timezone.now()))
        assert order and order[0] == "jobs_researchjob", (model.__name__, order)
        assert model.objects.get(pk=pk).status == StepStatus.QUEUED


def test_per_job_numbers_are_handed_out_under_the_job_row_lock(job):
    """Racing writers of one job's numbered rows (report versions here; plan versions, follow-ups and sources
    go through the same helper) get 1..N, none twice: `job_number_next` reads "the largest + 1" under the job
    row's lock, the first lock it takes."""
    from research.jobs.locks import job_number_next
    from research.jobs.models import ReportVersion

    results = race(lambda: services.report_version_create(job=job, markdown="# R\n", author="reporter").number)
    assert sorted(results) == list(range(1, RACERS + 1))
    if connection.vendor != "postgresql":
        return
    with transaction.atomic():
        order = _first_locks(lambda: job_number_next(job_id=job.pk, model=ReportVersion))
    assert order == ["jobs_researchjob"]


def test_renders_and_one_shot_units_lock_the_job_row_first_too(job):
    """The same order for the other kinds under the one protocol (units/lease.py): a render's claim, end and
    hand-off, and a follow-up's end and hand-off (a one-shot unit's claim locks only its own row)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no row locks (it locks the whole file); run with TEST_DATABASE=postgres")
    from datetime import timedelta

    from django.utils import timezone

    from research.jobs.models import FollowUp, OutputRender, OutputStatus
    from research.jobs.units.followups import FOLLOWUPS_KIND
    from research.jobs.units.lease import Outcome
    from research.jobs.units.renders import RENDERS_KIND

    render = OutputRender.objects.create(job=job, kind="pdf")
    followup = FollowUp.objects.create(job=job, number=1, question="And wind power?")
    failed = Outcome("failed", error=ValueError("x"))
    claims: list[Any] = []
    moves: list[tuple[str, Callable[[], Any]]] = [
        ("render claim", lambda: claims.append(RENDERS_KIND.claim(job_id=job.pk, kind="pdf"))),
        ("render finish", lambda: RENDERS_KIND.finish(job.pk, claims[0].unit, claims[0].token, failed)),
        ("follow-up claim", lambda: claims.append(FOLLOWUPS_KIND.claim(pk=followup.pk))),
        ("follow-up finish", lambda: FOLLOWUPS_KIND.finish(job.pk, claims[1].unit, claims[1].token, failed)),
    ]
    for name, call in moves:
        order = _first_locks(call)
        if name != "follow-up claim":
            assert order and order[0] == "jobs_researchjob", (name, order)
    assert OutputRender.objects.get(pk=render.pk).status == OutputStatus.FAILED
    assert FollowUp.objects.get(pk=followup.pk).status == OutputStatus.FAILED
    for model, pk, kind in ((OutputRender, render.pk, RENDERS_KIND), (FollowUp, followup.pk, FOLLOWUPS_KIND)):
        lapsed = timezone.now() - timedelta(seconds=1)
        model.objects.filter(pk=pk).update(status=OutputStatus.RUNNING, lease_until=lapsed)
        order = _first_locks(lambda kind=kind: kind.requeue_stale(timezone.now()))
        assert order and order[0] == "jobs_researchjob", (model.__name__, order)
        assert model.objects.get(pk=pk).status == OutputStatus.PENDING
