"""Thin views for clarification answers and "research it anyway" (forms that work without JavaScript)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from research.agents.types import MAX_CLARIFY_QUESTIONS
from research.errors import error_text
from research.jobs import conversation, selectors
from research.jobs.services import InvalidAction
from research.ratelimit import limited_in_service, ratelimited


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def job_clarify(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    answers = [request.POST.get(f"answer_{i}", "") for i in range(MAX_CLARIFY_QUESTIONS)]
    try:
        conversation.clarification_answer(job=job, answers=answers, skip=request.POST.get("op") == "skip")
    except (InvalidAction, ValidationError) as exc:
        messages.error(request, error_text(exc))
    else:
        messages.success(request, _("Thanks; the planner is writing the plan."))
    return redirect("job_detail", job_id=job.pk)


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def job_research_anyway(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    try:
        conversation.job_research_anyway(job=job)
    except InvalidAction as exc:
        messages.error(request, str(exc))
    return redirect("job_detail", job_id=job.pk)


@login_required
@require_POST
@limited_in_service("FOLLOWUP_RATE")  # conversation.followup_ask counts per account
def job_followup(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    try:
        followup = conversation.followup_ask(job=job, question=request.POST.get("question", ""))
    except (InvalidAction, ValidationError) as exc:
        messages.error(request, error_text(exc))
        return redirect("job_detail", job_id=job.pk)
    return redirect(f"/jobs/{job.pk}/#followup-{followup.number}")


@login_required
@require_POST
@limited_in_service("REPORT_EDIT_RATE")  # folding makes a new version, as an edit
def job_followup_fold(request: HttpRequest, job_id: int, number: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    try:
        version = conversation.followup_fold(job=job, number=number)
    except (InvalidAction, ValidationError) as exc:
        messages.error(request, error_text(exc))
    else:
        text = (_("Added to the report as version %(v)d; the outputs are being re-rendered.") if job.renders.exists()
                else _("Added to the report as version %(v)d."))
        messages.success(request, text % {"v": version})
    return redirect("job_detail", job_id=job.pk)
