"""Thin views: parse input, call a service or selector, render. Every job URL is owner-only (404 otherwise)."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, password_validation
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from research.agents.types import Plan
from research.jobs import selectors, services
from research.jobs.forms import (
    JobCreateForm,
    PlanMetaForm,
    PlanStepFormSet,
    ReportEditForm,
    SignupForm,
    plan_initial,
    plan_rows_apply,
    plan_rows_from_post,
)
from research.jobs.models import JobStatus, ResearchJob
from research.render.html import markdown_to_html


def _user(request: HttpRequest) -> User:
    """The signed-in user (views using this are behind login_required)."""
    assert isinstance(request.user, User)
    return request.user


def _collections(user: Any) -> list[tuple[int, str]]:
    from research.knowledge.selectors import collection_list_for_user

    return [(c.pk, c.name) for c in collection_list_for_user(user=user)]


def signup(request: HttpRequest) -> HttpResponse:
    if not settings.SIGNUP_ENABLED:
        raise Http404("Sign-up is turned off")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        username = form.cleaned_data["username"]
        if User.objects.filter(username__iexact=username).exists():
            form.add_error("username", _("That username is taken."))
        else:
            try:
                password_validation.validate_password(form.cleaned_data["password"], User(username=username))
            except ValidationError as exc:
                form.add_error("password", exc)
            else:
                user = User.objects.create_user(username, password=form.cleaned_data["password"])
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                return redirect("job_list")
    return render(request, "registration/signup.html", {"form": form})


@login_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = selectors.job_list_for_user(user=request.user)[:200]
    return render(request, "jobs/list.html", {"jobs": jobs})


@login_required
def job_new(request: HttpRequest) -> HttpResponse:
    form = JobCreateForm(request.POST or None, collections=_collections(request.user))
    if request.method == "POST" and form.is_valid():
        try:
            job = services.job_create(user=_user(request), question=form.cleaned_data["question"],
                                      options=form.options())
        except ValidationError as exc:
            form.add_error(None, exc)
        except services.RateLimited as exc:
            form.add_error(None, str(exc))
            return render(request, "jobs/new.html", {"form": form}, status=429)
        else:
            return redirect("job_detail", job_id=job.pk)
    return render(request, "jobs/new.html", {"form": form}, status=400 if form.errors else 200)


def _figure_url(job: ResearchJob) -> Any:
    def url(name: str) -> str:
        return f"/jobs/{job.pk}/files/figures/{Path(name).name}?inline=1"

    return url


def _plan_forms(job: ResearchJob, data: Any = None, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    latest = selectors.plan_latest(job=job)
    if latest is None:
        return {}
    plan = Plan.model_validate(latest.plan)
    if rows is not None:
        formset = PlanStepFormSet(initial=rows)
        meta = PlanMetaForm(initial={"base_version": data.get("base_version"), "title": data.get("title"),
                                     "feedback": data.get("feedback", "")})
    elif data is not None:
        formset = PlanStepFormSet(data)
        meta = PlanMetaForm(data)
    else:
        formset = PlanStepFormSet(initial=plan_initial(plan))
        meta = PlanMetaForm(initial={"base_version": latest.number, "title": plan.title})
    # Per instance, never on the class: requests run concurrently.
    formset.max_steps = int(job.options.get("max_steps", settings.JOB_MAX_STEPS))  # type: ignore[attr-defined]
    return {"plan_version": latest, "plan": plan, "formset": formset, "meta": meta}


def _detail_context(request: HttpRequest, job: ResearchJob, **extra: Any) -> dict[str, Any]:
    report = selectors.report_latest(job=job)
    ctx: dict[str, Any] = {
        "job": job,
        "steps": job.steps.order_by("position"),
        "renders": {r.kind: r for r in job.renders.all()},
        "artifacts": job.artifacts.exclude(kind="figure").order_by("created"),
        "report": report,
        "report_html": markdown_to_html(report.markdown, figure_url=_figure_url(job)) if report else "",
        "plan_versions": job.plan_versions.order_by("number"),
        "accepted_plan": selectors.plan_accepted(job=job),
        "cost": selectors.job_cost(job=job),
        "sources": job.sources.order_by("number").only("number", "url", "title", "kind"),
        "can_cancel": not job.is_terminal,
        "can_retry": job.status in (JobStatus.FAILED, JobStatus.CANCELLED),
        "can_delete": job.is_terminal or job.status == JobStatus.AWAITING_REVIEW,
    }
    if job.status == JobStatus.AWAITING_REVIEW and "formset" not in extra:
        ctx.update(_plan_forms(job))
    ctx.update(extra)
    return ctx


@login_required
@require_GET
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    return render(request, "jobs/detail.html", _detail_context(request, job))


@login_required
@require_GET
def job_panel(request: HttpRequest, job_id: int) -> HttpResponse:
    """The job's state panel alone, re-fetched by the page's JS when the state changes."""
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    return render(request, "jobs/_panel.html", _detail_context(request, job))


@login_required
@require_GET
def job_events(request: HttpRequest, job_id: int) -> JsonResponse:
    """Polling fallback of the socket: events after ?after=N."""
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    try:
        after = int(request.GET.get("after", "0"))
    except ValueError:
        after = 0
    return JsonResponse({"status": job.status, "events": selectors.job_events_after(job_id=job.pk, after=after)})


@login_required
@require_POST
def job_plan(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    op = request.POST.get("op", "")
    if job.status != JobStatus.AWAITING_REVIEW:
        messages.error(request, _("This plan is no longer waiting for review."))
        return redirect("job_detail", job_id=job.pk)
    if op not in ("accept", "replan"):  # an editor button: re-display the edited rows, nothing saved
        rows = plan_rows_apply(plan_rows_from_post(request.POST), op)
        forms = _plan_forms(job, data=request.POST, rows=rows)
        return render(request, "jobs/detail.html", _detail_context(request, job, **forms))
    forms = _plan_forms(job, data=request.POST)
    formset, meta = forms["formset"], forms["meta"]
    if formset.is_valid() and meta.is_valid():
        plan = formset.to_plan(title=meta.cleaned_data["title"], locale=forms["plan"].locale,
                               thought=forms["plan"].thought)
        try:
            services.plan_submit(job=job, plan=plan, base_version=meta.cleaned_data["base_version"], action=op,
                                 feedback=meta.cleaned_data.get("feedback", ""))
        except services.StalePlan as exc:
            messages.error(request, str(exc))
            forms["stale"] = True
            return render(request, "jobs/detail.html", _detail_context(request, job, **forms), status=409)
        except ValidationError as exc:
            meta.add_error(None, exc)
        else:
            messages.success(request, _("Plan accepted; research is starting.") if op == "accept"
                             else _("The planner is revising the plan."))
            return redirect("job_detail", job_id=job.pk)
    return render(request, "jobs/detail.html", _detail_context(request, job, **forms), status=400)


@login_required
@require_GET
def job_plan_version(request: HttpRequest, job_id: int, number: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    version = selectors.plan_version_get(job=job, number=number)
    return render(request, "jobs/plan_version.html", {"job": job, "version": version,
                                                      "plan": Plan.model_validate(version.plan)})


def _job_action(request: HttpRequest, job_id: int, action: str) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    try:
        if action == "cancel":
            services.job_cancel(job=job)
        elif action == "retry":
            services.job_retry(job=job)
        elif action == "delete":
            services.job_delete(job=job)
            messages.success(request, _("Job deleted."))
            return redirect("job_list")
        elif action == "rerender":
            services.output_rerender(job=job, kind=request.POST.get("kind", ""))
    except (services.InvalidAction, ValidationError) as exc:
        messages.error(request, "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc))
    return redirect("job_detail", job_id=job.pk)


@login_required
@require_POST
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "cancel")


@login_required
@require_POST
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "retry")


@login_required
@require_POST
def job_delete(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "delete")


@login_required
@require_POST
def job_rerender(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "rerender")


@login_required
def job_report_edit(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    report = selectors.report_latest(job=job)
    if report is None:
        raise Http404("No report yet")
    form = ReportEditForm(request.POST or None, initial={"markdown": report.markdown})
    if request.method == "POST" and form.is_valid():
        try:
            services.report_edit(job=job, markdown=form.cleaned_data["markdown"])
        except (services.InvalidAction, ValidationError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Saved as a new version; the outputs are being re-rendered."))
            return redirect("job_detail", job_id=job.pk)
    versions = job.report_versions.order_by("-number")
    return render(request, "jobs/report_edit.html", {"job": job, "form": form, "versions": versions})


@login_required
@require_GET
def artifact_download(request: HttpRequest, job_id: int, name: str) -> FileResponse:
    art, handle = selectors.artifact_open_for_download(user=request.user, job_id=job_id, name=name)
    filename = Path(art.name).name
    inline = request.GET.get("inline") == "1" and art.kind == "figure"
    content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    response = FileResponse(handle, as_attachment=not inline, filename=filename, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    return response
