"""The reaper (Celery beat, every few seconds): re-queue units whose worker died or whose message was lost,
and time out plan reviews. Units are idempotent (their claims check the database), so re-sending is safe."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction

from research.jobs import storage
from research.jobs.dispatch import (
    enqueue_advance,
    enqueue_followup,
    enqueue_render,
    enqueue_report_edit_check,
    enqueue_schedule,
)
from research.jobs.events import event_emit
from research.jobs.models import (
    WORKING_STATUSES,
    FollowUp,
    JobStatus,
    OneShotUnit,
    OutputRender,
    OutputStatus,
    ReportEditCheck,
    ResearchJob,
)
from research.jobs.states import job_set_status
from research.jobs.units.common import now, queue_grace
from research.jobs.units.runs import runs_requeue_stale
from research.jobs.units.steps import steps_requeue_stale
from research.knowledge.services import document_requeue_stale


def reap_stale_work() -> dict[str, int]:
    """Re-queue units whose worker died (lapsed lease) or whose message was lost; time out reviews.

    Returns how many stages, steps, renders, report edit checks, follow-ups, reviews and knowledge-base
    documents (still `indexing` after their message was lost) it acted on, and how many dead units' work
    folders it removed.
    """
    at = now()
    stale = at - queue_grace()
    counts = {"stages": 0, "steps": 0, "renders": 0, "reviews": 0, "documents": document_requeue_stale()}
    working = ResearchJob.objects.filter(status__in=list(WORKING_STATUSES))
    # Stages whose worker stopped renewing the lease, and working jobs nobody claimed at all
    # (the message was lost before any worker saw it).
    for job_id in [*working.filter(stage_lease_until__lt=at).values_list("pk", flat=True),
                   *working.filter(stage_lease_until__isnull=True, updated__lt=stale).values_list("pk", flat=True)]:
        counts["stages"] += 1
        enqueue_advance(job_id)
    # Steps and heavy mode's runs: one lease protocol (claims.py), the job row locked first.
    counts["steps"] = steps_requeue_stale(at)
    counts["runs"] = runs_requeue_stale(at)
    for row in OutputRender.objects.filter(status=OutputStatus.RUNNING, lease_until__lt=at):
        if OutputRender.objects.filter(pk=row.pk, status=OutputStatus.RUNNING, lease_until=row.lease_until).update(
            status=OutputStatus.PENDING, lease_token=""
        ):
            counts["renders"] += 1
            enqueue_render(row.job_id, row.kind)
    for row in OutputRender.objects.filter(status=OutputStatus.PENDING, job__status=JobStatus.RENDERING,
                                           updated__lt=stale):
        OutputRender.objects.filter(pk=row.pk).update(updated=at)
        enqueue_render(row.job_id, row.kind)
    counts["edit_checks"] = _edit_checks_requeue_stale(at, stale)
    counts["followups"] = _followups_requeue_stale(at, stale)
    for job_id in ResearchJob.objects.filter(status=JobStatus.AWAITING_REVIEW, review_deadline__lt=at).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            # Check again under the row lock: the user may have answered the review meanwhile.
            job = ResearchJob.objects.select_for_update().filter(
                pk=job_id, status=JobStatus.AWAITING_REVIEW, review_deadline__lt=at).first()
            if job is not None:
                counts["reviews"] += 1
                job_set_status(job=job, status=JobStatus.CANCELLED, error="The plan was not reviewed in time.")
    # Researching jobs whose steps all ended but whose scheduler message was lost.
    for job_id in ResearchJob.objects.filter(status=JobStatus.RESEARCHING, updated__lt=stale).values_list(
        "pk", flat=True
    ):
        enqueue_schedule(job_id)
    # Work folders of units whose process died on this host (the other hosts sweep theirs when they next render).
    counts["work_dirs"] = len(storage.work_dirs_sweep())
    return counts


# One-shot units a user's action leaves for a worker (models.OneShotUnit): a long report edit's check, a
# follow-up's answer, claimed like renders (oneshots.py).
def _oneshots_requeue_stale(model: type[OneShotUnit], at: datetime, stale: datetime, *,
                            requeued: Callable[[Any], object], send: Callable[[int], None]) -> int:
    """A running row whose lease lapsed goes back to pending (`requeued` emits its event) and is re-sent; its
    next claim fails it after STEP_MAX_ATTEMPTS. A pending row nobody claimed within the grace is re-sent."""
    count = 0
    objects: Any = model._default_manager
    for row in objects.filter(status=OutputStatus.RUNNING, lease_until__lt=at):
        with transaction.atomic():
            if objects.filter(pk=row.pk, status=OutputStatus.RUNNING, lease_until=row.lease_until).update(
                    status=OutputStatus.PENDING, lease_token="", updated=at):
                count += 1
                requeued(row)
                send(row.pk)
    for pk in objects.filter(status=OutputStatus.PENDING, updated__lt=stale).values_list("pk", flat=True):
        if objects.filter(pk=pk, status=OutputStatus.PENDING, updated__lt=stale).update(updated=at):
            count += 1
            send(pk)
    return count


_LOST = "its worker stopped renewing the lease"


def _edit_checks_requeue_stale(at: datetime, stale: datetime) -> int:
    """Long report edits checked by a worker (ReportEditCheck)."""
    return _oneshots_requeue_stale(
        ReportEditCheck, at, stale, send=enqueue_report_edit_check,
        requeued=lambda row: event_emit(job_id=row.job_id, type="report.check_requeued",
                                        payload={"check": row.pk, "attempt": row.attempts, "reason": _LOST}))


def _followups_requeue_stale(at: datetime, stale: datetime) -> int:
    """Follow-up questions answered by a worker (FollowUp); the page drops the lost attempt's streamed text."""
    return _oneshots_requeue_stale(
        FollowUp, at, stale, send=enqueue_followup,
        requeued=lambda row: event_emit(job_id=row.job_id, type="followup.requeued",
                                        payload={"number": row.number, "attempt": row.attempts, "reason": _LOST}))
