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
from django.db.models import Max
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from research.agents.depth import DEFAULT_RUNS
from research.agents.types import Plan
from research.errors import error_text
from research.jobs import fairness, selectors, services, storage
from research.jobs.models import JobStatus, ReportEditCheck, ResearchJob, StepStatus
from research.jobs.questions import MAX_QUESTION_CHARS
from research.jobs.search_check import search_check_errors, search_check_latest, web_probe_cached
from research.jobs.web.failures import failure_explain, search_unreachable_text
from research.jobs.web.forms import (
    JobCreateForm,
    PlanMetaForm,
    PlanStepFormSet,
    ReportEditForm,
    SignupForm,
    plan_initial,
    plan_rows_apply,
    plan_rows_from_post,
    report_markdown_problem,
)
from research.jobs.web.media import job_media
from research.ratelimit import limited_in_service, ratelimited
from research.render.formats import artifact_file, output_formats
from research.render.html import markdown_to_html, report_html_cached


def _user(request: HttpRequest) -> User:
    """The signed-in user (views using this are behind login_required)."""
    assert isinstance(request.user, User)
    return request.user


def _collections(user: Any) -> list[tuple[int, str]]:
    from research.knowledge.selectors import collection_list_for_user

    return [(c.pk, c.name) for c in collection_list_for_user(user=user)]


@ratelimited("signup", "SIGNUP_RATE")  # per IP: the visitor has no account yet
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
    jobs = list(selectors.job_list_for_user(user=request.user)[:200])
    # Depth, knowledge base and outputs tell apart two jobs on the same question (issue 33).
    kb_names = dict(_collections(request.user))
    labels = {"md": "Markdown", "pdf": "PDF", "pptx": _("Slides"), "podcast": _("Podcast")}
    for job in jobs:
        job.kb_name = kb_names.get(job.options.get("kb"))  # type: ignore[attr-defined]
        job.output_labels = [labels.get(o, o) for o in job.options.get("outputs") or ["md"]]  # type: ignore[attr-defined]
    return render(request, "jobs/list.html", {"jobs": jobs})


@login_required
@limited_in_service("JOB_CREATE_RATE")  # services.job_create counts per account
def job_new(request: HttpRequest) -> HttpResponse:
    collections = _collections(request.user)
    initial: dict[str, Any] = {}
    if request.GET.get("kb", "").isdigit() and int(request.GET["kb"]) in dict(collections):
        initial["kb"] = int(request.GET["kb"])  # back from "upload a file" on this page: that KB is chosen
    form = JobCreateForm(request.POST or None, collections=collections, initial=initial)

    def page() -> dict[str, Any]:  # the search probe only for a page that is drawn, never before a redirect
        return {"form": form, "has_kb": bool(collections), "search": web_probe_cached(),
                "question_max": MAX_QUESTION_CHARS}

    if request.method == "POST" and form.is_valid() and _nothing_to_search(form):
        # Skipping the review would start a run that can only fail: say so now, with the ways forward.
        form.add_error(None, _("Nothing can be searched: no web search provider answers from this server and no "
                               "knowledge base is chosen. Choose one or upload a file above, or untick “Run the "
                               "plan without review” to attach one on the plan page."))
    if request.method == "POST" and form.is_valid():
        try:
            job = services.job_create(user=_user(request), question=form.cleaned_data["question"],
                                      options=form.options())
        except ValidationError as exc:
            form.add_error(None, exc)
        except services.RateLimited as exc:
            form.add_error(None, str(exc))
            response = render(request, "jobs/new.html", page(), status=429)
            response["Retry-After"] = str(exc.verdict.retry_after)
            return response
        except services.CounterUnavailable as exc:  # the form comes back with the question, not a bare 503 page
            form.add_error(None, exc.message)
            response = render(request, "jobs/new.html", page(), status=503)
            response["Retry-After"] = str(exc.retry_after)
            return response
        else:
            return redirect("job_detail", job_id=job.pk)
    return render(request, "jobs/new.html", page(), status=400 if form.errors else 200)


def _nothing_to_search(form: JobCreateForm) -> bool:
    """An auto-accepted job with no knowledge base while no web provider answers (the probe is cached)."""
    options = form.options()
    return bool(options["auto_accept"] and options["kb"] is None and not web_probe_cached()["web_ok"])


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
                                     "feedback": data.get("feedback", ""),
                                     "depth": data.get("depth") or job.options.get("depth", "standard"),
                                     "runs": data.get("runs") or job.options.get("runs", DEFAULT_RUNS)})
    elif data is not None:
        formset = PlanStepFormSet(data)
        meta = PlanMetaForm(data)
    else:
        formset = PlanStepFormSet(initial=plan_initial(plan))
        meta = PlanMetaForm(initial={"base_version": latest.number, "title": plan.title,
                                     "depth": job.options.get("depth", "standard"),
                                     "runs": job.options.get("runs") if job.options.get("depth") == "heavy"
                                     else DEFAULT_RUNS})
    # Per instance, never on the class: requests run concurrently.
    formset.max_steps = int(job.options.get("max_steps", settings.JOB_MAX_STEPS))  # type: ignore[attr-defined]
    return {"plan_version": latest, "plan": plan, "formset": formset, "meta": meta}


def _downloads(job: ResearchJob) -> list[dict[str, Any]]:
    """One row per output (its files, its render state), so nothing is listed twice."""
    arts: dict[str, list[Any]] = {}
    for a in job.artifacts.exclude(kind="figure").order_by("created"):
        arts.setdefault(a.kind, []).append(a)
    renders = {r.kind: r for r in job.renders.all()}
    rows = []
    for fmt in output_formats():  # the registered formats (research/render/formats/), in their order
        files = [a for f in fmt.files for a in arts.get(f.kind, [])]
        r = renders.get(fmt.kind)
        if not files and (r is None or r.status == "pending"):
            continue
        rows.append({"kind": fmt.kind, "label": fmt.label, "files": files, "render": r is not None,
                     "status": r.status if r else "done",
                     "status_label": r.get_status_display() if r and r.status != "done" else "",
                     "error": r.error if r else ""})
    return rows


def _steps_with_runs(job: ResearchJob) -> list[Any]:
    """The job's steps, each with `run_rows`: its parallel runs in heavy mode (none otherwise)."""
    labels = dict(StepStatus.choices)
    runs = selectors.step_runs_by_step(job=job)
    steps = list(job.steps.order_by("position"))
    for step in steps:
        step.run_rows = [{**r, "status_label": labels.get(r["status"], r["status"])}  # type: ignore[attr-defined]
                         for r in runs.get(step.pk, [])]
    return steps


def _detail_context(request: HttpRequest, job: ResearchJob, **extra: Any) -> dict[str, Any]:
    # The seq first, then the state: the page then shows at least every event up to rendered_seq, so the
    # JS may skip refreshing for those without missing a change.
    rendered_seq = job.events.aggregate(m=Max("seq"))["m"] or 0
    job.refresh_from_db()
    report = selectors.report_latest(job=job)
    ctx: dict[str, Any] = {
        "job": job,
        "steps": _steps_with_runs(job),
        "renders": {r.kind: r for r in job.renders.all()},
        "artifacts": job.artifacts.exclude(kind="figure").order_by("created"),
        "report": report,
        "report_html": report_html_cached(report_id=report.pk, markdown=report.markdown, figure_url=_figure_url(job))
        if report
        else "",
        "report_check": selectors.report_check_summary(job=job, version=report.number) if report else None,
        "plan_versions": job.plan_versions.order_by("number"),
        "accepted_plan": selectors.plan_accepted(job=job),
        "cost": selectors.job_cost(job=job),
        "sources": job.sources.order_by("number").only("number", "url", "title", "kind"),
        # The buttons the page shows: the services' own rules (selectors.job_can).
        "can": selectors.job_can(job=job, has_report=report is not None),
        "failure": failure_explain(job=job),
        "media": job_media(job=job),
        "downloads": _downloads(job),
        "rendered_seq": rendered_seq,
        "wait_text": fairness.job_wait_text(job),  # "3 of your jobs are running; this one starts when one ends."
    }
    if job.status == JobStatus.AWAITING_REVIEW and "formset" not in extra:
        ctx.update(_plan_forms(job))
    if job.status == JobStatus.AWAITING_REVIEW:
        ctx.update(_search_state(request, job))
    ctx.update(extra)
    return ctx


def _search_state(request: HttpRequest, job: ResearchJob) -> dict[str, Any]:
    """What the plan page says about searching, true of this job: blocked (nothing to search), KB only, or ok."""
    check = search_check_latest(job=job)
    kb_id = job.options.get("kb")
    choices = _collections(request.user)
    ctx: dict[str, Any] = {"kb_choices": choices, "job_kb": kb_id,
                           "job_kb_name": dict(choices).get(kb_id) if kb_id else None}
    if not check:
        return ctx
    if not check["ok"]:
        ctx["search_blocked"] = True
        ctx["search_warning"] = (search_unreachable_text(search_check_errors(check)) if check.get("web", True)
                                 else _("Web search is off for this job and no knowledge base is attached."))
    elif check.get("kb") and not check.get("web_ok", check.get("web")):
        ctx["search_kb_only"] = (_("Web search is off for this job: the research searches the knowledge base "
                                   "alone.") if not check.get("web") else
                                 _("No web search provider could be reached: the research searches the "
                                   "knowledge base alone."))
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
@ratelimited("write", "WRITE_RATE")
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
    if op == "accept" and _search_state(request, job).get("search_blocked"):
        # The page offers no "Accept" then; a stale page or a script gets the same answer, with its edits kept.
        meta.is_valid()
        meta.add_error(None, _("Nothing can be searched for this job: attach a knowledge base (or upload a "
                               "file) first."))
        return render(request, "jobs/detail.html", _detail_context(request, job, **forms), status=400)
    if formset.is_valid() and meta.is_valid():
        plan = formset.to_plan(title=meta.cleaned_data["title"], locale=forms["plan"].locale,
                               thought=forms["plan"].thought)
        try:
            services.plan_submit(job=job, plan=plan, base_version=meta.cleaned_data["base_version"], action=op,
                                 feedback=meta.cleaned_data.get("feedback", ""), **meta.depth_options())
        except services.StalePlan as exc:
            job.refresh_from_db()
            if job.status != JobStatus.AWAITING_REVIEW:
                messages.error(request, str(exc))
                return redirect("job_detail", job_id=job.pk)
            # Keep every typed row; rebase the form on the newest version so "Accept" again applies them.
            post = request.POST.copy()
            post["base_version"] = str(forms["plan_version"].number)
            forms = _plan_forms(job, data=post, rows=plan_rows_from_post(request.POST))
            forms["stale"] = True
            forms["stale_refused"] = True
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
        messages.error(request, error_text(exc))
    return redirect("job_detail", job_id=job.pk)


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def job_cancel(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "cancel")


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "retry")


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def job_delete(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "delete")


@login_required
@require_POST
@ratelimited("rerender", "RERENDER_RATE")
def job_rerender(request: HttpRequest, job_id: int) -> HttpResponse:
    return _job_action(request, job_id, "rerender")


def _report_check(job: ResearchJob, markdown: str) -> str:
    """An error message when the edit cites numbers no source has; empty when every [n] is known."""
    unknown = selectors.report_unknown_citations(job=job, markdown=markdown)
    if not unknown:
        return ""
    # The numbers the user sees in the references list, not the count of every source the research found.
    known = selectors.report_citable_numbers(job=job, markdown=markdown)
    if known and known == list(range(known[0], known[-1] + 1)):
        allowed = f"{known[0]}–{known[-1]}"
    else:
        allowed = ", ".join(str(n) for n in known) or "—"
    return _("Unknown citation numbers: %(nums)s. Each [n] must match a source in the references list "
             "(%(allowed)s).") % {"nums": ", ".join(f"[{n}]" for n in unknown), "allowed": allowed}


@login_required
@ratelimited("report_edit", "REPORT_EDIT_RATE")
def job_report_edit(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    report = selectors.report_latest(job=job)
    if report is None:
        raise Http404("No report yet")
    form = ReportEditForm(request.POST or None, initial={"markdown": report.markdown})
    if request.method == "POST" and form.is_valid():
        problem = _report_check(job, form.cleaned_data["markdown"])
        if problem:
            form.add_error("markdown", problem)
        else:
            try:
                saved = services.report_edit_submit(job=job, markdown=form.cleaned_data["markdown"])
            except (services.InvalidAction, ValidationError) as exc:
                form.add_error(None, str(exc))
            else:
                if isinstance(saved, ReportEditCheck):
                    messages.info(request, _background_check_text(len(saved.markdown)))
                else:
                    messages.success(request, _("Saved as a new version; the outputs are being re-rendered.")
                                     if job.renders.exists() else _("Saved as a new version."))
                return redirect("job_detail", job_id=job.pk)
    versions = job.report_versions.order_by("-number")
    markdown = form.data.get("markdown", report.markdown) if form.is_bound else report.markdown
    # An edit refused as too costly to render is not rendered for the preview either, nor one over the budget.
    costly = report_markdown_problem(str(markdown))
    preview = "" if costly else _preview_html(job, str(markdown))
    return render(request, "jobs/report_edit.html", {"job": job, "form": form, "versions": versions,
                                                     "current": report, "preview": preview},
                  status=400 if form.errors else 200)


@login_required
@require_POST
@ratelimited("report_preview", "PREVIEW_RATE")
def job_report_preview(request: HttpRequest, job_id: int) -> JsonResponse:
    """Live preview for the report editor: sanitized HTML plus the citation check, nothing saved."""
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    markdown = request.POST.get("markdown", "")[:500_000]
    problem = report_markdown_problem(markdown)
    if problem:
        return JsonResponse({"html": "", "problem": problem})
    problem = "" if len(markdown) > settings.REPORT_CHECK_INLINE_CHARS else _report_check(job, markdown)
    return JsonResponse({"html": str(_preview_html(job, markdown)), "problem": problem})


def _background_check_text(chars: int) -> str:
    return _("The edit is long (%(n)s characters), so it is being checked in the background; the new version "
             "appears here when the check is done.") % {"n": f"{chars:,}"}


def _preview_html(job: ResearchJob, markdown: str) -> str:
    """The report as HTML for the editor, or a note when it is over the web thread's budget."""
    if len(markdown) > settings.REPORT_CHECK_INLINE_CHARS:
        note = _("No live preview for a report over %(max)s characters: saving checks it in the background.")
        return format_html('<p class="muted">{}</p>', note % {"max": f"{settings.REPORT_CHECK_INLINE_CHARS:,}"})
    return markdown_to_html(markdown, figure_url=_figure_url(job))


@login_required
@limited_in_service("REPORT_EDIT_RATE")  # restore counts as an edit (services.report_version_restore)
def job_report_version(request: HttpRequest, job_id: int, number: int) -> HttpResponse:
    """Open an old report version, compare it with the current one, or restore it (POST)."""
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    version = job.report_versions.filter(number=number).first()
    current = selectors.report_latest(job=job)
    if version is None or current is None:
        raise Http404("No such version")
    if request.method == "POST":
        try:
            saved = services.report_version_restore(job=job, number=number)
        except (services.InvalidAction, ValidationError) as exc:
            messages.error(request, error_text(exc))
        else:
            if saved is None:
                messages.info(request, _("v%(n)s is the current version; nothing changed.") % {"n": number})
            elif isinstance(saved, ReportEditCheck):
                messages.info(request, _background_check_text(len(saved.markdown)))
                return redirect("job_detail", job_id=job.pk)
            text = (_("Restored v%(n)s as a new version; the outputs are being re-rendered.") if job.renders.exists()
                    else _("Restored v%(n)s as a new version."))
            messages.success(request, text % {"n": number})
        return redirect("job_detail", job_id=job.pk)
    # difflib is superlinear on many repeated lines (40,000 of them: ~4 s): long versions are not compared
    # on the web thread.
    comparable = len(version.markdown) + len(current.markdown) <= 2 * settings.REPORT_CHECK_INLINE_CHARS
    diff = selectors.report_diff(old=version.markdown, new=current.markdown, old_label=f"v{number}",
                                 new_label=f"v{current.number}") if version.pk != current.pk and comparable else []
    return render(request, "jobs/report_version.html", {
        "job": job, "version": version, "current": current, "diff": diff, "comparable": comparable,
        # The same cache as the job page: a version never changes, so it is rendered once, not per request.
        "html": report_html_cached(report_id=version.pk, markdown=version.markdown, figure_url=_figure_url(job)),
    })


@login_required
@require_GET
def artifact_download(request: HttpRequest, job_id: int, name: str) -> FileResponse:
    art, handle = selectors.artifact_open_for_download(user=request.user, job_id=job_id, name=name)
    filename = Path(art.name).name
    declared = artifact_file(art.kind)  # the output format's declaration of this file, if any
    inline = request.GET.get("inline") == "1" and (art.kind == "figure" or (declared is not None and declared.inline))
    content_type = (declared.mime if declared else mimetypes.guess_type(filename)[0]) or "application/octet-stream"
    response = FileResponse(handle, as_attachment=not inline, filename=filename, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_GET
def job_preview(request: HttpRequest, job_id: int, name: str) -> FileResponse:
    """A PNG thumbnail the render stored (PDF pages, slides); owner-only like every job URL.

    Served from the storage, so every web host answers it; only a name the storage lists is opened.
    """
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    if name not in storage.previews_list(job.pk):
        raise Http404("No such preview")
    handle = storage.file_open(storage.artifact_key(job.pk, storage.PREVIEWS + name))
    response = FileResponse(handle, content_type="image/png")
    response["X-Content-Type-Options"] = "nosniff"
    return response
