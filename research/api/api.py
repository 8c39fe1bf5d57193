"""The JSON API under /api/v1/ (django-ninja). Thin: parse, call a service or selector, answer.

Every job route is owner-only: another user's job is 404, exactly as in the web UI.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Annotated, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import NinjaAPI, Query
from ninja import Path as PathParam
from ninja.errors import AuthenticationError
from ninja.errors import ValidationError as SchemaError

from research.api import schemas
from research.api.auth import TokenAuth, api_user
from research.api.events import job_event_stream
from research.api.selectors import job_detail
from research.api.throttle import ApiThrottle
from research.jobs import conversation, selectors, services
from research.jobs.web.forms import BasePlanStepFormSet, PlanMetaForm, PlanStepFormSet

# What each status means, in the OpenAPI document: every operation lists every status it can answer.
STATUS_TEXT = {
    400: "Refused: the request matches the schema but breaks a rule the schema cannot state (a rule across "
         "fields, e.g. `web: false` without `kb`; an edited plan the editor's rules refuse). `detail` says which.",
    401: "No, a malformed, an unknown or a revoked bearer token.",
    404: "No such job (or file, follow-up, knowledge base) among yours: another user's is 404 too, never 403.",
    409: "The job's state does not allow this now (e.g. cancelling an ended job, answering a stale plan "
         "version, a follow-up before the report is done).",
    422: "The request does not match the schema (a missing field, a wrong type, a value out of range).",
    429: "Over the account's request rate (`API_RATE`) or job creation rate (`JOB_CREATE_RATE`); "
         "wait `Retry-After` seconds.",
    503: "The rate-limit counter (Redis) cannot be reached, so the request was refused and nothing changed "
         "(throttles fail closed); wait `Retry-After` seconds.",
}


class DocumentedAPI(NinjaAPI):
    """NinjaAPI whose OpenAPI document says what each error status means and which headers come with it."""

    def get_openapi_schema(self, *, path_prefix: str | None = None,
                           path_params: dict[str, Any] | None = None) -> Any:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        for path_item in schema.get("paths", {}).values():
            for operation in path_item.values():
                for code, response in operation.get("responses", {}).items():
                    if int(code) in STATUS_TEXT:
                        response["description"] = STATUS_TEXT[int(code)]
                    if int(code) in (429, 503):
                        response["headers"] = {"Retry-After": {
                            "description": "Seconds until a request may succeed.",
                            "schema": {"type": "integer", "minimum": 1}, "required": True}}
                    if int(code) == 401:
                        response["headers"] = {"WWW-Authenticate": {
                            "description": "`Bearer`", "schema": {"type": "string"}, "required": True}}
        return schema


api = DocumentedAPI(
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
    response = api.create_response(request, {"detail": str(exc), "errors": []}, status=429)
    response["Retry-After"] = str(max(1, exc.verdict.retry_after))
    return response


@api.exception_handler(services.CounterUnavailable)
def _counter_unavailable(request: HttpRequest, exc: services.CounterUnavailable) -> HttpResponse:
    """The throttle's counter (Redis) cannot be reached: refused, fail closed (docs/operations.md)."""
    response = api.create_response(request, {"detail": exc.message, "errors": []}, status=503)
    response["Retry-After"] = str(exc.retry_after)
    return response


def _schema_error_line(error: dict[str, Any]) -> str:
    """One pydantic error as "field: problem", the field named as the client wrote it (no ninja wrappers)."""
    parts = [str(part) for part in error.get("loc", ())]
    while len(parts) > 1 and parts[0] in ("body", "query", "path", "payload"):
        parts.pop(0)
    message = str(error.get("msg", "invalid"))
    if error.get("type") == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern"))
        message = {schemas.NOT_BLANK: "must not be blank or contain a NUL character",
                   schemas.NO_NUL: "must not contain a NUL character"}.get(pattern, f"must match {pattern}")
    return f"{'.'.join(parts)}: {message}"


@api.exception_handler(SchemaError)
def _schema_error(request: HttpRequest, exc: SchemaError) -> HttpResponse:
    """422 in the same shape as every other error: `detail` a sentence, `errors` one line per problem."""
    errors = [_schema_error_line(e) for e in exc.errors]
    return api.create_response(request, {"detail": "; ".join(errors) or "Invalid request.", "errors": errors},
                               status=422)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request, {"detail": "Send a valid API token: Authorization: Bearer TOKEN.", "errors": []}, status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc) or "Not found.", "errors": []}, status=404)


@api.exception_handler(services.InvalidAction)
def _invalid_action(request: HttpRequest, exc: services.InvalidAction) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc), "errors": []}, status=409)


@api.exception_handler(services.StalePlan)
def _stale_plan(request: HttpRequest, exc: services.StalePlan) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc), "errors": []}, status=409)


def _errors(*codes: int) -> dict[int, Any]:
    return {code: schemas.ErrorOut for code in (401, 422, 429, 503, *codes)}


# every operation: no token (401), not the schema (422), over a rate (429), the rate counter unreachable (503)
LIST = _errors()
READ = _errors(404)  # a job route
ACTION = _errors(400, 404, 409)  # an action on a job
JobId = Annotated[int, PathParam(ge=1, le=schemas.MAX_ID)]
Number = Annotated[int, PathParam(ge=1, le=schemas.MAX_ID)]
After = Annotated[int, Query(ge=0, le=schemas.MAX_ID, description="Events with a greater seq.")]


@api.post("/jobs", response={201: schemas.JobOut, **_errors(400, 404)}, tags=["jobs"], summary="Create a research job")
def job_create(request: HttpRequest, body: schemas.JobCreateIn) -> tuple[int, dict[str, Any]]:
    options = body.dict(exclude={"question"})
    options = {k: v for k, v in options.items() if v is not None}
    job = services.job_create(user=api_user(request), question=body.question, options=options)
    return 201, job_detail(job=job)


@api.get("/jobs", response={200: list[schemas.JobBriefOut], **LIST}, tags=["jobs"], summary="Your jobs, newest first")
def job_list(request: HttpRequest, limit: int = 50) -> list[dict[str, Any]]:
    jobs = selectors.job_list_for_user(user=api_user(request))[: max(1, min(limit, 200))]
    return [{"id": j.pk, "status": j.status, "question": j.question, "title": j.title, "created": j.created}
            for j in jobs]


@api.get("/jobs/{job_id}", response={200: schemas.JobOut, **READ}, tags=["jobs"],
         summary="A job: status, plan, steps, outputs, artifacts, report")
def job_read(request: HttpRequest, job_id: JobId) -> dict[str, Any]:
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


@api.post("/jobs/{job_id}/plan", response={200: schemas.JobOut, **ACTION}, tags=["plan review"],
          summary="Accept the plan (as written or edited) or ask for a re-plan")
def plan_submit(request: HttpRequest, job_id: JobId, body: schemas.PlanSubmitIn) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    plan = _plan_from_body(body, job)
    services.plan_submit(job=job, plan=plan, base_version=body.base_version, action=body.action,
                         feedback=body.feedback, depth=body.depth, runs=body.runs)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/clarify", response={200: schemas.JobOut, **ACTION}, tags=["conversation"],
          summary="Answer (or skip) the coordinator's clarifying questions; planning starts")
def clarify_answer(request: HttpRequest, job_id: JobId, body: schemas.ClarifyIn) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    conversation.clarification_answer(job=job, answers=body.answers, skip=body.skip)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/research-anyway", response={200: schemas.JobOut, **ACTION}, tags=["conversation"],
          summary="After a direct answer: plan, research and write the report after all")
def research_anyway(request: HttpRequest, job_id: JobId) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    conversation.job_research_anyway(job=job)
    job.refresh_from_db()
    return job_detail(job=job)


def _followup_out(f: Any) -> dict[str, Any]:
    return {"number": f.number, "question": f.question, "status": f.status, "answer": f.answer,
            "error": f.error or None, "added_sources": f.added_sources, "folded_into": f.folded_into}


@api.post("/jobs/{job_id}/followups", response={201: schemas.FollowUpOut, **ACTION}, tags=["conversation"],
          summary="Ask a follow-up question about a finished report (answered by a worker; watch the events)")
def followup_ask(request: HttpRequest, job_id: JobId, body: schemas.FollowUpIn) -> tuple[int, dict[str, Any]]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    return 201, _followup_out(conversation.followup_ask(job=job, question=body.question))


@api.get("/jobs/{job_id}/followups", response={200: list[schemas.FollowUpOut], **READ},
         tags=["conversation"], summary="The job's follow-up questions and answers")
def followup_list(request: HttpRequest, job_id: JobId) -> list[dict[str, Any]]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    return [_followup_out(f) for f in job.followups.order_by("number")]


@api.post("/jobs/{job_id}/followups/{number}/fold", response={200: schemas.JobOut, **ACTION},
          tags=["conversation"], summary="Add an answer to the report as a new version and re-render the outputs")
def followup_fold(request: HttpRequest, job_id: JobId, number: Number) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    conversation.followup_fold(job=job, number=number)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/cancel", response={200: schemas.JobOut, **ACTION}, tags=["jobs"])
def job_cancel(request: HttpRequest, job_id: JobId) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    services.job_cancel(job=job)
    job.refresh_from_db()
    return job_detail(job=job)


@api.post("/jobs/{job_id}/retry", response={200: schemas.JobOut, **ACTION}, tags=["jobs"])
def job_retry(request: HttpRequest, job_id: JobId) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    services.job_retry(job=job)
    job.refresh_from_db()
    return job_detail(job=job)


@api.get("/jobs/{job_id}/events", response={200: schemas.EventsOut, **READ}, tags=["events"],
         summary="Stored events after a seq (polling)")
def job_events(request: HttpRequest, job_id: JobId, after: After = 0) -> dict[str, Any]:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    return {"status": job.status, "events": selectors.job_events_after(job_id=job.pk, after=max(0, after))}


@api.get("/jobs/{job_id}/events/stream", response={200: None, **READ}, tags=["events"],
         summary="Server-sent events: replay after a seq, then live",
         description=("`text/event-stream`. Each event has `id:` = its seq and `data:` = "
                      '`{"seq", "type", "payload", "ts"}`. Resume with `?after=SEQ` or the `Last-Event-ID` '
                      "header. The stream ends when the job has ended and every event was sent."))
def job_events_stream(request: HttpRequest, job_id: JobId, after: After = 0) -> StreamingHttpResponse:
    job = selectors.job_get_for_user(user=api_user(request), job_id=job_id)
    last_id = request.headers.get("Last-Event-ID", "")
    if last_id.isdigit():
        after = int(last_id)
    response = StreamingHttpResponse(job_event_stream(job_id=job.pk, after=max(0, after)),
                                     content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response


@api.get("/jobs/{job_id}/files/{path:name}", response={200: None, **READ}, tags=["files"],
         summary="Download one of the job's files (streamed)")
def artifact_download(request: HttpRequest, job_id: JobId, name: str) -> FileResponse:
    # The web's download path (owner check, then a stream from the storage: local disk or S3).
    art, handle = selectors.artifact_open_for_download(user=api_user(request), job_id=job_id, name=name)
    filename = Path(art.name).name
    content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    response = FileResponse(handle, as_attachment=True, filename=filename, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    return response
