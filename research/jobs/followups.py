"""Follow-up questions on a finished job: ask (user side), answer (worker side), fold into a new report version."""

from __future__ import annotations

import logging
import time

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from research import textre
from research.agents.types import SourceRef
from research.jobs.dispatch import enqueue_followup
from research.jobs.events import event_emit
from research.jobs.leases import LeaseLost, lease_kept
from research.jobs.models import FollowUp, JobStatus, OutputStatus, ResearchJob
from research.jobs.oneshots import oneshot_claim, oneshot_holder
from research.jobs.services import InvalidAction, report_edit

logger = logging.getLogger(__name__)

MAX_FOLLOWUP_CHARS = 2000


def followup_ask(*, job: ResearchJob, question: str) -> FollowUp:
    question = (question or "").replace("\r\n", "\n").strip()
    if not question:
        raise ValidationError(_("Please type a question."))
    if len(question) > MAX_FOLLOWUP_CHARS:
        raise ValidationError(_("A follow-up may have at most %(n)d characters.") % {"n": MAX_FOLLOWUP_CHARS})
    if job.status != JobStatus.DONE or not job.report_versions.exists():
        raise InvalidAction(_("Follow-up questions can be asked once the report is done."))
    with transaction.atomic():
        last = job.followups.order_by("-number").values_list("number", flat=True).first() or 0
        followup = FollowUp.objects.create(job=job, number=last + 1, question=question)
        event_emit(job_id=job.pk, type="followup.asked", payload={"number": followup.number, "question": question})
        enqueue_followup(followup.pk)
    return followup


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


def report_in_registry_numbers(*, job: ResearchJob, markdown: str) -> str:
    """The report body with its citations written as registry numbers (Source.number), without references.

    Final reports number their references 1..n (research.agents.verify); the follow-up answer cites
    registry numbers, so both are brought to one numbering before they meet.
    """
    from research.agents.citations import CITATION, _numbers, _segments, strip_references_section
    from research.agents.verify import citation_targets

    sources = [SourceRef(number=s.number, url=s.url, title=s.title, text="", kind=s.kind)
               for s in job.sources.order_by("number")]
    targets = citation_targets(markdown, sources)

    def sub(match: textre.Match) -> str:
        numbers = [targets[n].number for n in _numbers(match.group(2)) if n in targets]
        return match.group(1) + "".join(f"[{n}]" for n in dict.fromkeys(numbers)) if numbers else ""

    body = strip_references_section(markdown)
    return "".join(seg if code else CITATION.sub(sub, seg) for seg, code in _segments(body)).rstrip()


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

    A leased unit (research/jobs/leases.py): a worker that dies stops renewing and the reaper re-queues the
    follow-up (`followup.requeued`); only the lease holder writes the answer or the failure.
    """
    from research.agents.nodes.followup import answer_followup
    from research.jobs.context import JobContext
    from research.jobs.selectors import report_latest

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


def followup_fold(*, job: ResearchJob, number: int) -> int:
    """Add the answer to the report as a new section, save a new version and re-render the outputs."""
    followup = job.followups.filter(number=number).first()
    if followup is None or followup.status != OutputStatus.DONE:
        raise InvalidAction(_("This follow-up has no answer yet."))
    if followup.folded_into:
        raise InvalidAction(_("This answer is already in the report."))
    from research.agents.citations import strip_references_section
    from research.jobs.selectors import report_latest

    report = report_latest(job=job)
    if report is None:
        raise InvalidAction(_("Follow-up questions can be asked once the report is done."))
    body = report_in_registry_numbers(job=job, markdown=report.markdown)
    answer = strip_references_section(followup.answer).strip()  # cites registry numbers already
    merged = f"{body}\n\n## {followup.question.splitlines()[0][:200]}\n\n{answer}\n"
    # Without a references list report_edit reads registry numbers, checks the cited claims and
    # writes one references list for the whole report, renumbered 1..n.
    version = report_edit(job=job, markdown=merged)
    FollowUp.objects.filter(pk=followup.pk).update(folded_into=version.number)
    return version.number
