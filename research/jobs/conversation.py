"""Writes for the conversation around a job: answering the coordinator's clarifying questions,
"research it anyway" after a direct answer, and follow-up questions (asked here, answered by the
worker unit research/jobs/units/followups.py, folded into a new report version here)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from research.agents.types import MAX_CLARIFY_QUESTIONS
from research.jobs.dispatch import enqueue_advance, enqueue_followup
from research.jobs.events import event_emit
from research.jobs.locks import job_number_next
from research.jobs.models import FollowUp, JobStatus, OutputStatus, ResearchJob
from research.jobs.options import options_with_stage
from research.jobs.selectors import job_can
from research.jobs.services import InvalidAction, job_set_status, report_edit
from research.ratelimit import ratelimit_account

MAX_ANSWER_CHARS = 1000


def clarification_answer(*, job: ResearchJob, answers: list[str], skip: bool = False) -> None:
    """Store the user's answers (or that they skipped) and go on to planning; the planner reads them."""
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if not job_can(job=job).answer_clarification:
            raise InvalidAction(_("This job is not waiting for answers."))
        questions = list(job.options.get("clarify_questions") or [])[:MAX_CLARIFY_QUESTIONS]
        cleaned = [] if skip else [str(a or "").replace("\r\n", "\n").strip() for a in answers]
        if any(len(a) > MAX_ANSWER_CHARS for a in cleaned):
            raise ValidationError(_("An answer may have at most %(n)d characters.") % {"n": MAX_ANSWER_CHARS})
        if not skip and not any(cleaned):
            raise ValidationError(_("Answer at least one question, or skip them."))
        pairs = [{"question": q, "answer": (cleaned[i] if i < len(cleaned) else "")}
                 for i, q in enumerate(questions)]
        opts = options_with_stage(job.options, clarifications=pairs, clarify_skipped=skip)
        event_emit(job_id=job.pk, type="clarify.answered", payload={"skipped": skip, "answers": pairs})
        nxt = JobStatus.INVESTIGATING if job.options.get("background") else JobStatus.PLANNING
        job_set_status(job=job, status=nxt, options=opts, stage_attempts=0)
        enqueue_advance(job.pk)


def job_research_anyway(*, job: ResearchJob) -> None:
    """A job the coordinator answered directly: research it and write the report after all."""
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if not job_can(job=job).research_anyway:
            raise InvalidAction(_("Only a job that ended with a direct answer can be researched anyway."))
        opts = dict(job.options, direct_answer=False)
        event_emit(job_id=job.pk, type="job.research_anyway", payload={"answer": job.answer})
        nxt = JobStatus.INVESTIGATING if job.options.get("background") else JobStatus.PLANNING
        job_set_status(job=job, status=nxt, options=opts, answer="", finished_at=None, stage_attempts=0)
        enqueue_advance(job.pk)


MAX_FOLLOWUP_CHARS = 2000


def followup_ask(*, job: ResearchJob, question: str) -> FollowUp:
    question = (question or "").replace("\r\n", "\n").strip()
    if not question:
        raise ValidationError(_("Please type a question."))
    if len(question) > MAX_FOLLOWUP_CHARS:
        raise ValidationError(_("A follow-up may have at most %(n)d characters.") % {"n": MAX_FOLLOWUP_CHARS})
    if not job_can(job=job).ask_followup:
        raise InvalidAction(_("Follow-up questions can be asked once the report is done."))
    ratelimit_account(user=job.owner, scope="followup", rate_setting="FOLLOWUP_RATE")
    with transaction.atomic():
        number = job_number_next(job_id=job.pk, model=FollowUp)
        followup = FollowUp.objects.create(job=job, number=number, question=question)
        event_emit(job_id=job.pk, type="followup.asked", payload={"number": followup.number, "question": question})
        enqueue_followup(followup.pk)
    return followup


def followup_fold(*, job: ResearchJob, number: int) -> int:
    """Add the answer to the report as a new section, save a new version and re-render the outputs."""
    followup = job.followups.filter(number=number).first()
    if followup is None or followup.status != OutputStatus.DONE:
        raise InvalidAction(_("This follow-up has no answer yet."))
    if followup.folded_into:
        raise InvalidAction(_("This answer is already in the report."))
    from research.jobs.selectors import report_in_registry_numbers, report_latest
    from research.report.citations import strip_references_section

    report = report_latest(job=job)
    if report is None:
        raise InvalidAction(_("Follow-up questions can be asked once the report is done."))
    # A fold saves a version and re-renders every output: it counts as a report edit (issue 34).
    ratelimit_account(user=job.owner, scope="report_edit", rate_setting="REPORT_EDIT_RATE")
    body = report_in_registry_numbers(job=job, markdown=report.markdown)
    answer = strip_references_section(followup.answer).strip()  # cites registry numbers already
    merged = f"{body}\n\n## {followup.question.splitlines()[0][:200]}\n\n{answer}\n"
    # Registry numbers throughout (not the list a user saw): report_edit checks the cited claims and
    # writes one references list for the whole report, renumbered 1..n.
    # Registry numbers (not a list the user saw); refused unless job_can(...).fold_followup (the edit rule).
    version = report_edit(job=job, markdown=merged, registry_numbers=True)
    FollowUp.objects.filter(pk=followup.pk).update(folded_into=version.number)
    return version.number
