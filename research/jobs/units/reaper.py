"""The reaper (Celery beat, every few seconds): re-queue units whose worker died or whose message was lost,
and time out plan reviews. Units are idempotent (their claims check the database), so re-sending is safe.

Every kind of leased unit is one line of UNIT_KINDS; the reaper walks it (lease.py, `requeue_stale`)."""

from __future__ import annotations

from django.db import transaction

from research.jobs import storage
from research.jobs.dispatch import enqueue_schedule
from research.jobs.models import JobStatus, ResearchJob
from research.jobs.states import job_set_status
from research.jobs.units.common import now, queue_grace
from research.jobs.units.edit_check import EDIT_CHECKS_KIND
from research.jobs.units.followups import FOLLOWUPS_KIND
from research.jobs.units.lease import UnitKind
from research.jobs.units.renders import RENDERS_KIND
from research.jobs.units.runs import RUNS_KIND
from research.jobs.units.stages import STAGES_KIND
from research.jobs.units.steps import STEPS_KIND
from research.knowledge.services import document_requeue_stale

# The kinds of leased unit, in the order the reaper hands them on; the key is its count in the result.
UNIT_KINDS: dict[str, UnitKind] = {  # type: ignore[type-arg]
    "stages": STAGES_KIND,
    "steps": STEPS_KIND,
    "runs": RUNS_KIND,
    "renders": RENDERS_KIND,
    "edit_checks": EDIT_CHECKS_KIND,
    "followups": FOLLOWUPS_KIND,
}


def reap_stale_work() -> dict[str, int]:
    """Re-queue units whose worker died (lapsed lease) or whose message was lost; time out reviews.

    Returns how many units of each kind in UNIT_KINDS, reviews and knowledge-base documents (still `indexing`
    after their message was lost) it acted on, and how many dead units' work folders it removed.
    """
    at = now()
    stale = at - queue_grace()
    counts = {"reviews": 0, "documents": document_requeue_stale()}
    for name, kind in UNIT_KINDS.items():
        counts[name] = kind.requeue_stale(at)
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
