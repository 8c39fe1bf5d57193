"""One-shot background units (a long report edit's check, a follow-up's answer) survive a dead worker like
the other units.

A worker killed in the middle of a check stops renewing its lease; the reaper (in beat) puts the check
back to pending (`report.check_requeued`) and re-sends it; another worker checks it again and saves the
edit once. A check whose worker was lost STEP_MAX_ATTEMPTS times ends failed, and the owner's event
stream (the job page's timeline) says why. A follow-up whose worker is killed while the model answers is
answered again by another worker, once. Real parts: PostgreSQL, Redis, Celery prefork workers, beat, the
model double over HTTP.

To kill the worker at a known point (inside the transaction that saves the new version) rather than at
some moment of a check that takes a fraction of a second, the test holds the job row's lock: the worker
checks the edit and then waits for that lock to insert the new version; PostgreSQL shows the wait
(pg_stat_activity), and the worker is killed there.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from research.jobs import conversation, services
from research.jobs.models import (
    FollowUp,
    JobEvent,
    JobStatus,
    OutputStatus,
    ReportEditCheck,
    ResearchJob,
    Source,
)
from tests.faults.stack import QUESTION, kill_worker, wait_until
from tests.integration.helpers import assert_event_log_complete

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

if connection.vendor != "postgresql":  # the kill point is a row lock the worker waits on
    pytestmark.append(pytest.mark.skip(reason="needs TEST_DATABASE=postgres (row locks)"))


def _done_job(owner, engine: str = "offline") -> ResearchJob:
    """A finished job with a report, made without running it (no stage message reaches the stack)."""
    job = ResearchJob.objects.create(owner=owner, question=QUESTION, status=JobStatus.DONE, engine=engine,
                                     options={"outputs": ["md"], "web": False})
    Source.objects.create(job=job, number=1, url="https://a.example/solar", title="Solar",
                          text="Solar module prices fell by 90% between 2010 and 2020.", text_hash="x")
    services.report_version_create(job=job, markdown="# Solar\n\nModule prices fell by 90% [1].\n", author="reporter")
    return job


def _long_edit() -> str:
    paragraph = "Solar module prices fell by 90% between 2010 and 2020 [1]. Installations grew every year.\n\n"
    return "# Solar, edited\n\n" + paragraph * (settings.REPORT_CHECK_INLINE_CHARS // len(paragraph) + 20)


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return int(cursor.fetchone()[0])


def test_a_worker_killed_mid_check_is_replaced_and_the_edit_is_saved_once(stack, alice):
    job = _done_job(alice)
    edit = _long_edit()
    check = services.report_edit_submit(job=job, markdown=edit)  # its message waits in the stack's Redis
    assert isinstance(check, ReportEditCheck)
    stack.beat()
    with transaction.atomic():
        ResearchJob.objects.select_for_update().get(pk=job.pk)  # the new version cannot be inserted now
        doomed = stack.worker(concurrency=1)
        wait_until(lambda: _waiting_on_a_lock(), timeout=60, what="the worker to wait for the job row",
                   stack=stack)
        row = ReportEditCheck.objects.get(pk=check.pk)
        assert (row.status, row.attempts) == (OutputStatus.RUNNING, 1)
        stack.worker(concurrency=1)  # the one that takes over
        kill_worker(doomed, stack=stack)
    # The killed worker's transaction never committed; the reaper hands the check on once its lease lapses.

    def ended() -> ReportEditCheck | None:
        row = ReportEditCheck.objects.get(pk=check.pk)
        return row if row.status in (OutputStatus.DONE, OutputStatus.FAILED) else None

    row = wait_until(ended, timeout=90, what="the check to end", stack=stack)
    assert row.status == OutputStatus.DONE, row.error
    assert (row.attempts, row.version, row.lease_token) == (2, 2, "")
    assert list(job.report_versions.values_list("number", "author")) == [(1, "reporter"), (2, "user")]
    saved = job.report_versions.get(number=2).markdown
    assert saved.startswith("# Solar, edited") and saved.count("Installations grew every year.") > 500
    events = assert_event_log_complete(job)
    counts = Counter(e.type for e in events)
    assert (counts["report.checking"], counts["report.check_requeued"], counts["report.ready"]) == (1, 1, 1)
    assert counts["report.check_failed"] == 0
    requeued = next(e for e in events if e.type == "report.check_requeued")
    assert requeued.payload == {"check": check.pk, "attempt": 1, "reason": "its worker stopped renewing the lease"}


def test_a_check_lost_every_time_ends_failed_and_the_owner_is_told_why(stack, alice):
    """The last of STEP_MAX_ATTEMPTS claims died: the reaper re-sends it, a real worker's claim gives up."""
    job = _done_job(alice)
    attempts = settings.STEP_MAX_ATTEMPTS
    check = ReportEditCheck.objects.create(job=job, markdown=_long_edit())
    ReportEditCheck.objects.filter(pk=check.pk).update(
        status=OutputStatus.RUNNING, attempts=attempts, lease_token="the-dead-workers",
        lease_until=timezone.now() - timedelta(seconds=30))
    stack.worker(concurrency=1)
    stack.beat()

    def ended() -> ReportEditCheck | None:
        row = ReportEditCheck.objects.get(pk=check.pk)
        return row if row.status in (OutputStatus.DONE, OutputStatus.FAILED) else None

    row = wait_until(ended, timeout=60, what="the check to end", stack=stack)
    assert row.status == OutputStatus.FAILED and row.finished_at is not None
    assert f"gave up after {attempts} attempts" in row.error and "Save it again" in row.error
    assert job.report_versions.count() == 1  # nothing saved
    assert JobEvent.objects.filter(job=job, type="report.check_requeued").count() == 1

    owner = Client()
    owner.force_login(alice)
    shown = owner.get(f"/jobs/{job.pk}/events/?after=0").json()
    failed = [e for e in shown["events"] if e["type"] == "report.check_failed"]
    assert len(failed) == 1 and failed[0]["payload"] == {"check": check.pk, "error": row.error}


def test_a_worker_killed_mid_followup_is_replaced_and_the_question_answered_once(stack, alice):
    job = _done_job(alice, engine="llm")
    stack.beat()
    doomed = stack.worker(concurrency=1)
    held = stack.director.gate("followup")  # the model call of the first attempt waits here
    followup = conversation.followup_ask(job=job, question="How far did solar module prices fall?")
    held.wait_arrival()
    row = FollowUp.objects.get(pk=followup.pk)
    assert (row.status, row.attempts) == (OutputStatus.RUNNING, 1)
    stack.worker(concurrency=1)
    kill_worker(doomed, stack=stack)
    held.open()

    def ended() -> FollowUp | None:
        row = FollowUp.objects.get(pk=followup.pk)
        return row if row.status in (OutputStatus.DONE, OutputStatus.FAILED) else None

    row = wait_until(ended, timeout=90, what="the follow-up to end", stack=stack)
    assert row.status == OutputStatus.DONE, row.error
    assert row.attempts == 2 and row.lease_token == "" and "[1]" in row.answer
    events = assert_event_log_complete(job)
    counts = Counter(e.type for e in events)
    assert (counts["followup.requeued"], counts["followup.done"], counts["followup.failed"]) == (1, 1, 0)
