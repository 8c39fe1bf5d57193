"""The follow-up answer unit: a worker answers one follow-up question (asking and folding are in
research/jobs/conversation.py)."""

from __future__ import annotations

import time
from typing import Any

from django.utils.translation import gettext as _

from research.jobs.dispatch import enqueue_followup
from research.jobs.events import event_emit
from research.jobs.models import FollowUp, OutputStatus
from research.jobs.selectors import report_in_registry_numbers
from research.jobs.units.lease import Claim, OneShotKind, unit_run


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


class _FollowUps(OneShotKind[FollowUp]):
    """Follow-up questions answered by a worker, under the lease protocol (lease.py); when a worker is lost
    the page drops that attempt's streamed text (`followup.requeued`)."""

    model = FollowUp
    name = "followups"
    requeued_type = "followup.requeued"

    def describe(self, unit: FollowUp) -> str:
        return f"follow-up {unit.pk}"

    def requeued_payload(self, unit: FollowUp) -> dict[str, Any]:
        return {"number": unit.number}

    def give_up_reason(self, unit: FollowUp) -> str:
        return _("Gave up after %(n)d attempts: the worker answering it was lost each time. Ask again to retry."
                 ) % {"n": unit.attempts}

    def succeed(self, unit: FollowUp, value: Any) -> None:
        final, added = value
        FollowUp.objects.filter(pk=unit.pk).update(
            **self.ended_fields(OutputStatus.DONE, answer=final.markdown, added_sources=added))
        event_emit(job_id=unit.job_id, type="followup.done",
                   payload={"number": unit.number, "cited": final.cited,
                            "removed_citations": final.removed, "added_sources": added})

    def fail(self, unit: FollowUp, error: str) -> None:
        """Fail it with a reason the panel shows (`followup.failed`), never an empty answer."""
        FollowUp.objects.filter(pk=unit.pk).update(**self.ended_fields(OutputStatus.FAILED, error=error[:2000]))
        event_emit(job_id=unit.job_id, type="followup.failed", payload={"number": unit.number,
                                                                      "error": error[:500]})

    def send(self, unit: FollowUp) -> None:
        enqueue_followup(unit.pk)


FOLLOWUPS_KIND = _FollowUps()


def _followup_claim(followup_id: int) -> tuple[FollowUp, str] | None:
    """Claim it; after STEP_MAX_ATTEMPTS claims it fails, saying why."""
    claim = FOLLOWUPS_KIND.claim(pk=followup_id)
    return None if claim is None else (claim.unit, claim.token)


def followup_run(*, followup_id: int) -> None:
    """Worker side: answer with the job's report and sources (maybe after a small research round).

    A leased unit (research/jobs/units/lease.py): a worker that dies stops renewing and the reaper re-queues the
    follow-up (`followup.requeued`); only the lease holder writes the answer or the failure.
    """
    unit_run(FOLLOWUPS_KIND, _answer, pk=followup_id)


def _answer(claim: Claim[FollowUp]) -> tuple[Any, int]:
    from research.agents.nodes.followup import answer_followup
    from research.jobs.selectors import report_latest
    from research.jobs.units.context import JobContext

    followup = claim.unit
    job = followup.job
    report = report_latest(job=job)
    ctx = JobContext(job, step_id=None)
    batcher = _Deltas(job.pk, followup.number)
    final, added = answer_followup(
        ctx, question=followup.question,
        report_md=report_in_registry_numbers(job=job, markdown=report.markdown) if report else "",
        on_delta=batcher)
    batcher.flush()
    return final, added
