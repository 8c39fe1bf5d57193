"""The follow-up answer unit: a worker answers one follow-up question (asking and folding are in
research/jobs/conversation.py)."""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from research.jobs.events import event_emit
from research.jobs.models import FollowUp, OutputStatus
from research.jobs.selectors import report_in_registry_numbers
from research.jobs.units.leases import LeaseLost, lease_kept
from research.jobs.units.oneshots import oneshot_claim, oneshot_holder

logger = logging.getLogger(__name__)

class _Deltas:
    """Batch answer tokens into followup.delta events (at most ~4 a second), like the report's."""

    def __init__(self, job_id: int, number: int) -> None:
        self.job_id, self.number = job_id, number
        self.buf: list[str] = []
        self.last = time.monotonic()

    def __call__(self, text: str) -> None:
        if text:
            self.buf.append(text)
            if sum(map(len, self.buf)) >= 400 or time.monotonic() - self.last >= 0.25:
                self.flush()

    def flush(self) -> None:
        if self.buf:
            event_emit(job_id=self.job_id, type="followup.delta", payload={"number": self.number,
                                                                           "text": "".join(self.buf)})
            self.buf = []
        self.last = time.monotonic()


def _followup_fail(*, followup: FollowUp, error: str) -> None:
    """Fail it with a reason the panel shows (`followup.failed`); the caller holds the row."""
    FollowUp.objects.filter(pk=followup.pk).update(status=OutputStatus.FAILED, error=error[:2000], lease_until=None,
                                                   lease_token="", finished_at=timezone.now())
    event_emit(job_id=followup.job_id, type="followup.failed", payload={"number": followup.number,
                                                                      "error": error[:500]})


def _followup_claim(followup_id: int) -> tuple[FollowUp, str] | None:
    """Claim it (oneshots.oneshot_claim); after STEP_MAX_ATTEMPTS claims it fails, saying why."""
    return oneshot_claim(FollowUp, followup_id, give_up=lambda followup: _followup_fail(followup=followup, error=_(
        "Gave up after %(n)d attempts: the worker answering it was lost each time. Ask again to retry.")
        % {"n": followup.attempts}))


def followup_run(*, followup_id: int) -> None:
    """Worker side: answer with the job's report and sources (maybe after a small research round).

    A leased unit (research/jobs/units/leases.py): a worker that dies stops renewing and the reaper re-queues the
    follow-up (`followup.requeued`); only the lease holder writes the answer or the failure.
    """
    from research.agents.nodes.followup import answer_followup
    from research.jobs.selectors import report_latest
    from research.jobs.units.context import JobContext

    claimed = _followup_claim(followup_id)
    if claimed is None:
        return
    followup, token = claimed
    job = followup.job
    report = report_latest(job=job)
    ctx = JobContext(job, step_id=None)
    batcher = _Deltas(job.pk, followup.number)
    with lease_kept(FollowUp, followup.pk, "lease_until", token_field="lease_token", token=token):  # noqa: S106
        try:
            final, added = answer_followup(
                ctx, question=followup.question,
                report_md=report_in_registry_numbers(job=job, markdown=report.markdown) if report else "",
                on_delta=batcher)
            batcher.flush()
            with transaction.atomic():
                oneshot_holder(FollowUp, followup.pk, token, what="follow-up")
                FollowUp.objects.filter(pk=followup_id).update(
                    status=OutputStatus.DONE, answer=final.markdown, added_sources=added, lease_until=None,
                    lease_token="", finished_at=timezone.now())
                event_emit(job_id=job.pk, type="followup.done",
                           payload={"number": followup.number, "cited": final.cited,
                                    "removed_citations": final.removed, "added_sources": added})
        except LeaseLost:
            logger.warning("follow-up %s passed to another worker; this one stops", followup_id)
        except Exception as exc:  # shown as a failure on the page, never as an empty answer
            with transaction.atomic():
                try:
                    oneshot_holder(FollowUp, followup.pk, token, what="follow-up")
                except LeaseLost:
                    return  # replaced meanwhile: the new holder reports
                _followup_fail(followup=followup, error=str(exc))
