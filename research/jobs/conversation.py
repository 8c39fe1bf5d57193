"""Writes for the conversation around a job: answering the coordinator's clarifying questions, and
"research it anyway" after a direct answer. The worker side lives in the coordinator stage."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from research.agents.types import MAX_CLARIFY_QUESTIONS
from research.jobs.dispatch import enqueue_advance
from research.jobs.events import event_emit
from research.jobs.models import JobStatus, ResearchJob
from research.jobs.services import InvalidAction, job_set_status

MAX_ANSWER_CHARS = 1000


def clarification_answer(*, job: ResearchJob, answers: list[str], skip: bool = False) -> None:
    """Store the user's answers (or that they skipped) and go on to planning; the planner reads them."""
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if job.status != JobStatus.AWAITING_CLARIFICATION:
            raise InvalidAction(_("This job is not waiting for answers."))
        questions = list(job.options.get("clarify_questions") or [])[:MAX_CLARIFY_QUESTIONS]
        cleaned = [] if skip else [str(a or "").replace("\r\n", "\n").strip() for a in answers]
        if any(len(a) > MAX_ANSWER_CHARS for a in cleaned):
            raise ValidationError(_("An answer may have at most %(n)d characters.") % {"n": MAX_ANSWER_CHARS})
        if not skip and not any(cleaned):
            raise ValidationError(_("Answer at least one question, or skip them."))
        pairs = [{"question": q, "answer": (cleaned[i] if i < len(cleaned) else "")}
                 for i, q in enumerate(questions)]
        opts = dict(job.options, clarifications=pairs, clarify_skipped=skip)
        event_emit(job_id=job.pk, type="clarify.answered", payload={"skipped": skip, "answers": pairs})
        nxt = JobStatus.INVESTIGATING if job.options.get("background") else JobStatus.PLANNING
        job_set_status(job=job, status=nxt, options=opts, stage_attempts=0)
        enqueue_advance(job.pk)


def job_research_anyway(*, job: ResearchJob) -> None:
    """A job the coordinator answered directly: research it and write the report after all."""
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if job.status != JobStatus.DONE or not job.answer or job.report_versions.exists():
            raise InvalidAction(_("Only a job that ended with a direct answer can be researched anyway."))
        opts = dict(job.options, direct_answer=False)
        event_emit(job_id=job.pk, type="job.research_anyway", payload={"answer": job.answer})
        nxt = JobStatus.INVESTIGATING if job.options.get("background") else JobStatus.PLANNING
        job_set_status(job=job, status=nxt, options=opts, answer="", finished_at=None, stage_attempts=0)
        enqueue_advance(job.pk)

