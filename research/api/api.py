"""The JSON API under /api/v1/ (django-ninja). Thin: parse, call a service or selector, answer.

Every job route is owner-only: another user's job is 404, exactly as in the web UI.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import NinjaAPI

from research.api import schemas
from research.api.auth import TokenAuth, api_user
from research.api.events import job_event_stream
from research.api.selectors import job_detail
from research.api.throttle import ApiThrottle
from research.jobs import conversation, followups, selectors, services
from research.jobs.forms import BasePlanStepFormSet, PlanMetaForm, PlanStepFormSet

api = NinjaAPI(
    title="Deep Research API",
    version="1",
    description=(
        "Create research jobs, review their plans, follow their events and download their outputs. "
        "Authenticate with `Authorization: Bearer TOKEN`; create tokens on the API tokens page (/settings/tokens/)."
    ),
    urls_namespace="api-v1",
    auth=TokenAuth(),
    throttle=[ApiThrottle()],
    docs_url="/docs",
    openapi_url="/openapi.json",
)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    messages = list(exc.messages)
    return api.create_response(request, {"detail": "; ".join(messages), "errors": messages}, status=400)


@api.exception_handler(services.RateLimited)
def _rate_limited(request: HttpRequest, exc: services.RateLimited) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc), "errors": []}, status=429)


@api.exception_handler(services.InvalidAction)
def _invalid_action(request: HttpRequest, exc: services.InvalidAction) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc), "errors": []}, status=409)


@api.exception_handler(services.StalePlan)
def _stale_plan(request: HttpRequest, exc: services.StalePlan) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc), "errors": []}, status=409)


ERRORS: dict[int, Any] = {400: schemas.ErrorOut, 404: schemas.ErrorOut, 409: schemas.ErrorOut,
                          429: schemas.ErrorOut}


@api.post("/jobs", response={201: schemas.JobOut, **ERRORS}, tags=["jobs"], summary="Create a research job")
def job_create(request: HttpRequest, body: schemas.JobCreateIn) -> tuple[int, dict[str, Any]]:
    options = body.dict(exclude={"question"})
    options = {k: v for k, v in options.items() if v is not None}
    job = services.job_create(user=api_user(request), question=body.question, options=options)
    return 201, job_detail(job=job)


@api.get("/jobs", response=list[schemas.JobBriefOut], tags=["jobs"], summary="Your jobs, newest first")
def job_list(request: HttpRequest, limit: int = 50) -> list[dict[str, Any]]:
    jobs = selectors.job_list_for_user(user=api_user(request))[: max(1, min(limit, 200))]
    return [{"id": j.pk, "status": j.status, "question": j.question, "title": j.title, "created": j.created}
            for j in jobs]


@api.get("/jobs/{job_id}", response={200: schemas.JobOut, 404: schemas.ErrorOut}, tags=["jobs"],
         summary="A job: status, plan, steps, outputs, artifacts, report")
def job_read(request: HttpRequest, job_id: int) -> dict[str, Any]:
    return job_detail(job=selectors.job_get_for_user(user=api_user(request), job_id=job_id))


def _plan_from_body(body: schemas.PlanSubmitIn, job: Any) -> Any:
    """Validate the posted plan with the web editor's own forms (same rules, same messages)."""
    from research.agents.types import Plan

    latest = selectors.plan_latest(job=job)
    if latest is None:
        raise services.StalePlan("This job has no plan yet.")
    written = Plan.model_validate(latest.plan)
    if body.plan is None:
        return written
    data: dict[str, Any] = {
        "form-TOTAL_FORMS": str(len(body.plan.steps)), "form-INITIAL_FORMS": "0",
        "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "50",
        "base_version": str(body.base_version), "title": body.plan.title, "feedback": body.feedback,
    }
    for i, step in enumerate(body.plan.steps):
        data.update({f"form-{i}-id": step.id, f"form-{i}-title": step.title,
                     f"form-{i}-description": step.description, f"form-{i}-step_type": step.step_type,
                     f"form-{i}-depends_on": ", ".join(step.depends_on)})
        if step.need_search:
            data[f"form-{i}-need_search"] = "on"
    formset = PlanStepFormSet(data)
    formset.max_steps = int(job.options.get("max_steps", settings.JOB_MAX_STEPS))  # type: ignore[attr-defined]
    meta = PlanMetaForm(data)
    if not (formset.is_valid() and meta.is_valid()):
        errors: list[str] = [str(e) for e in formset.non_form_errors()]
        for i, form in enumerate(formset.forms):
            for field, msgs in form.errors.items():
                errors.extend(f"step {i + 1} {field}: {m}" for m in msgs)
        for field, msgs in meta.errors.items():
            errors.extend(f"{field}: {m}" for m in msgs)
        raise ValidationError(errors or ["The plan is not valid."])
    assert isinstance(formset, BasePlanStepFormSet)
    return formset.to_plan(title=meta.cleaned_data["title"], locale=written.locale, thought=written.thought)


@api.post("/jobs/{job_id}/plan", response={200: schemas.JobOut, **ERRORS}, tags=["plan review"],
          summary="Accept the plan (as written or edited) or ask for a re-plan")
def plan_submit(request: HttpRequest, job_id: int, body: schemas.PlanSubmitIn) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    plan = _plan_from_body(body, job)
    services.plan_submit(job=job, plan=plan, base_version=body.base_version, action=body.action,
                         feedback=body.feedback, depth=body.depth, runs=body.runs)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/clarify", response={200: schemas.JobOut, **ERRORS}, tags=["conversation"],
          summary="Answer (or skip) the coordinator's clarifying questions; planning starts")
def clarify_answer(request: HttpRequest, job_id: int, body: schemas.ClarifyIn) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    conversation.clarification_answer(job=job, answers=body.answers, skip=body.skip)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/research-anyway", response={200: schemas.JobOut, **ERRORS}, tags=["conversation"],
          summary="After a direct answer: plan, research and write the report after all")
def research_anyway(request: HttpRequest, job_id: int) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    conversation.job_research_anyway(job=job)
    job.refresh_from_db()
    return job_detail(job=job)


def _followup_out(f: Any) -> dict[str, Any]:
    return {"number": f.number, "question": f.question, "status": f.status, "answer": f.answer,
            "error": f.error or None, "added_sources": f.added_sources, "folded_into": f.folded_into}


@api.post("/jobs/{job_id}/followups", response={201: schemas.FollowUpOut, **ERRORS}, tags=["conversation"],
          summary="Ask a follow-up question about a finished report (answered by a worker; watch the events)")
def followup_ask(request: HttpRequest, job_id: int, body: schemas.FollowUpIn) -> tuple[int, dict[str, Any]]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    return 201, _followup_out(followups.followup_ask(job=job, question=body.question))


@api.get("/jobs/{job_id}/followups", response={200: list[schemas.FollowUpOut], 404: schemas.ErrorOut},
         tags=["conversation"], summary="The job's follow-up questions and answers")
def followup_list(request: HttpRequest, job_id: int) -> list[dict[str, Any]]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    return [_followup_out(f) for f in job.followups.order_by("number")]


@api.post("/jobs/{job_id}/followups/{number}/fold", response={200: schemas.JobOut, **ERRORS},
          tags=["conversation"], summary="Add an answer to the report as a new version and re-render the outputs")
def followup_fold(request: HttpRequest, job_id: int, number: int) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    followups.followup_fold(job=job, number=number)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/cancel", response={200: schemas.JobOut, **ERRORS}, tags=["jobs"])
def job_cancel(request: HttpRequest, job_id: int) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    services.job_cancel(job=job)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/retry", response={200: schemas.JobOut, **ERRORS}, tags=["jobs"])
def job_retry(request: HttpRequest, job_id: int) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    services.job_retry(job=job)
    job.refresh_from_db()
    return job_detail(job=job)


@api.get("/jobs/{job_id}/events", response={200: schemas.EventsOut, 404: schemas.ErrorOut}, tags=["events"],
         summary="Stored events after a seq (polling)")
def job_events(request: HttpRequest, job_id: int, after: int = 0) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    return {"status": job.status, "events": selectors.job_events_after(job_id=job.pk, after=max(0, after))}


@api.get("/jobs/{job_id}/events/stream", response={200: None, 404: schemas.ErrorOut}, tags=["events"],
         summary="Server-sent events: replay after a seq, then live",
         description=("`text/event-stream`. Each event has `id:` = its seq and `data:` = "
                      '`{"seq", "type", "payload", "ts"}`. Resume with `?after=SEQ` or the `Last-Event-ID` '
                      "header. The stream ends when the job has ended and every event was sent."))
def job_events_stream(request: HttpRequest, job_id: int, after: int = 0) -> StreamingHttpResponse:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    last_id = request.headers.get("Last-Event-ID", "")
    if last_id.isdigit():
        after = int(last_id)
    response = StreamingHttpResponse(job_event_stream(job_id=job.pk, after=max(0, after)),
                                     content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response


@api.get("/jobs/{job_id}/files/{path:name}", response={200: None, 404: schemas.ErrorOut}, tags=["files"],
         summary="Download one of the job's files (streamed)")
def artifact_download(request: HttpRequest, job_id: int, name: str) -> FileResponse:
    # The web's download path (owner check, then a stream from the storage: local disk or S3).
    art, handle = selectors.artifact_open_for_download(user=api_user(request), job_id=job_id, name=name)
    filename = Path(art.name).name
    content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    response = FileResponse(handle, as_attachment=True, filename=filename, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    return response
