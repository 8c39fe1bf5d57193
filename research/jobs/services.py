"""Writes that users trigger (views, CLI, API), and the plan/report writes the stages share.

Worker-side units live in research/jobs/units/; status changes go through
states.job_set_status (re-exported here); messages to the workers go through dispatch.py.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from research import ratelimit
from research.agents.graph import effective_depends_on, validate_plan
from research.agents.types import Plan, SourceRef
from research.jobs.artifacts import artifact_save_bytes, job_dir_remove
from research.jobs.dispatch import enqueue_advance, enqueue_render, enqueue_report_edit_check, enqueue_schedule
from research.jobs.events import event_emit
from research.jobs.fairness import job_cost
from research.jobs.locks import job_number_next
from research.jobs.models import (
    JobStatus,
    JobStep,
    OutputRender,
    OutputStatus,
    PlanVersion,
    ReportEditCheck,
    ReportVersion,
    ResearchJob,
    StepStatus,
)
from research.jobs.options import ENGINES, depth_options_clean, job_options_clean, options_with_stage
from research.jobs.questions import MAX_QUESTION_CHARS, question_clean
from research.jobs.selectors import job_can, report_seen_references
from research.jobs.states import InvalidTransition, job_set_status
from research.render.formats import rendered_kinds
from research.report.check import ReportTooLarge, report_check

logger = logging.getLogger(__name__)

__all__ = [
    "ENGINES", "MAX_QUESTION_CHARS", "CounterUnavailable", "InvalidAction", "InvalidTransition",
    "RateLimited",
    "StalePlan", "job_cancel", "job_create", "job_delete", "job_kb_attach", "job_options_clean", "job_retry",
    "job_set_status",
    "output_rerender", "plan_start", "plan_submit", "plan_version_create", "renders_queue", "report_edit",
    "report_edit_checked", "report_edit_save", "report_edit_submit", "report_version_create",
]

REPORT_MAX_CHARS = 500_000  # what the edit form accepts; the checked text must fit it too


RateLimited = ratelimit.RateLimited
CounterUnavailable = ratelimit.CounterUnavailable  # the counter's Redis is down: refused (503), nothing created


class StalePlan(Exception):
    """The plan changed since the form was loaded."""


class InvalidAction(Exception):
    """The job is not in a state that allows this."""


def job_create_charge(*, user_id: int, cost: int) -> ratelimit.Verdict:
    """Charge a new job's cost to JOB_CREATE_RATE ("N/h": N cost units in any sliding hour)."""
    rate = settings.JOB_CREATE_RATE
    if not rate:
        return ratelimit.ALLOWED
    limit, window = (int(x) for x in ratelimit._split_rate(rate))
    return ratelimit.sliding_window_hit(scope="job_create", key=f"user:{user_id}", limit=limit, window=window,
                                        cost=cost)


def job_create(*, user: User, question: str, options: dict[str, Any]) -> ResearchJob:
    question = question_clean(question)  # no words, or too long: refused before a job exists
    clean = job_options_clean(options)
    if clean["kb"] is not None:
        from research.knowledge.selectors import collection_get_for_user

        collection_get_for_user(user=user, collection_id=clean["kb"])  # 404 for others' collections
    if not clean["web"] and clean["kb"] is None:
        raise ValidationError(_("A job without web search needs a knowledge base."))
    # An atomic counter, not a count of rows: parallel posts cannot pass together, deletes free nothing.
    # The window slides, and a heavy job with k runs per step counts k (fair share, issue 34).
    verdict = job_create_charge(user_id=user.pk, cost=job_cost(clean))
    if not verdict.allowed:
        raise RateLimited(
            verdict,
            _("You can start %(limit)d jobs per %(window)s; please wait %(seconds)d seconds.")
            % {
                "limit": verdict.limit,
                "window": ratelimit.rate_window_text(settings.JOB_CREATE_RATE),
                "seconds": verdict.retry_after,
            },
        )
    with transaction.atomic():
        job = ResearchJob.objects.create(
            owner=user, question=question, options=clean, engine=clean["engine"], status=JobStatus.QUEUED,
        )
        for kind in clean["outputs"]:
            if kind != "md":
                OutputRender.objects.create(job=job, kind=kind)
        event_emit(job_id=job.pk, type="job.status", payload={"status": JobStatus.QUEUED})
        enqueue_advance(job.pk)
    return job


def job_kb_attach(*, job: ResearchJob, collection_id: int) -> None:
    """Attach one of the owner's knowledge bases to a job whose plan waits for review (or that is planning).

    The plan page offers this when nothing else can be searched; the steps read the job's options when
    they run, so the research that follows searches it.
    """
    from research.jobs.search_check import search_check_kb_attached
    from research.knowledge.selectors import collection_get_for_user

    collection_get_for_user(user=job.owner, collection_id=collection_id)  # 404 for another user's
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if job.status not in (JobStatus.AWAITING_REVIEW, JobStatus.QUEUED, JobStatus.COORDINATING,
                              JobStatus.INVESTIGATING, JobStatus.PLANNING):
            raise InvalidAction(_("A knowledge base can only be attached before the research starts."))
        job.options = {**job.options, "kb": collection_id}
        job.save(update_fields=["options"])
        search_check_kb_attached(job=job)


def job_cancel(*, job: ResearchJob) -> None:
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if not job_can(job=job).cancel:
            raise InvalidAction(_("The job has already ended."))
        ResearchJob.objects.filter(pk=job.pk).update(cancel_requested=True)
        if job.status in (JobStatus.QUEUED, JobStatus.AWAITING_REVIEW) or not job.steps.filter(
            status__in=[StepStatus.RUNNING, StepStatus.QUEUED]
        ).exists():
            JobStep.objects.filter(job=job, status__in=[StepStatus.PENDING, StepStatus.QUEUED]).update(
                status=StepStatus.CANCELLED
            )
            job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
        else:
            event_emit(job_id=job.pk, type="job.cancelling", payload={})


def job_retry(*, job: ResearchJob) -> None:
    """Retry a failed or cancelled job from where it stopped; done steps are kept."""
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if not job_can(job=job).retry:
            raise InvalidAction(_("Only a failed or cancelled job can be retried."))
        job.steps.exclude(status=StepStatus.DONE).update(status=StepStatus.PENDING, attempts=0, error="",
                                                         lease_until=None)
        ResearchJob.objects.filter(pk=job.pk).update(cancel_requested=False, stage_attempts=0, finished_at=None)
        job.cancel_requested = False
        if job.report_versions.exists() and job.renders.exists():
            renders_queue(job=job, keep_done=True)
        elif job.steps.exists():
            job_set_status(job=job, status=JobStatus.RESEARCHING, error="")
            enqueue_schedule(job.pk)
        else:
            job_set_status(job=job, status=JobStatus.QUEUED, error="")
            enqueue_advance(job.pk)


def job_delete(*, job: ResearchJob) -> None:
    if not job_can(job=job).delete:
        raise InvalidAction(_("Cancel the job before deleting it."))
    job_id = job.pk
    job.delete()
    job_dir_remove(job_id)


# --- plan review -------------------------------------------------------------------


def plan_version_create(*, job: ResearchJob, plan: Plan, author: str, feedback: str = "",
                        accepted: bool = False) -> PlanVersion:
    with transaction.atomic():
        number = job_number_next(job_id=job.pk, model=PlanVersion)
        version = PlanVersion.objects.create(
            job=job, number=number, author=author, plan=plan.model_dump(), feedback=feedback, accepted=accepted
        )
        event_type = "plan.ready" if author == "planner" else "plan.updated"
        event_emit(job_id=job.pk, type=event_type,
                   payload={"version": version.number, "author": author, "plan": version.plan})
    return version


def plan_submit(*, job: ResearchJob, plan: Plan, base_version: int, action: str, feedback: str = "",
                depth: str | None = None, runs: int | None = None) -> PlanVersion:
    """Accept (possibly edited) or ask for a re-plan. Refuses a stale form with StalePlan.

    `depth` / `runs` (the review page's depth choice) replace the job's, checked like a new job's."""
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().get(pk=job.pk)
        if not job_can(job=job).review_plan:
            raise StalePlan(_("This plan is no longer waiting for review."))
        latest = job.plan_versions.order_by("-number").first()
        if latest is None or latest.number != base_version:
            raise StalePlan(
                _("The plan changed since you opened it. Your edits were not applied; review the new plan.")
            )
        errors = validate_plan(plan, max_steps=int(job.options.get("max_steps", settings.JOB_MAX_STEPS)))
        if errors:
            raise ValidationError(errors)
        edited = Plan.model_validate(latest.plan) != plan
        if action == "replan":
            if not feedback.strip():
                raise ValidationError(_("Tell the planner what to change."))
            if job.replans >= settings.JOB_MAX_REPLANS:
                raise ValidationError(
                    _("The re-plan limit (%(n)d) is reached; edit and accept.") % {"n": settings.JOB_MAX_REPLANS}
                )
            version = plan_version_create(job=job, plan=plan, author="user", feedback=feedback) if edited else latest
            ResearchJob.objects.filter(pk=job.pk).update(replans=job.replans + 1)
            opts = options_with_stage(job.options, replan_feedback=feedback.strip(), replan_base=version.number)
            job_set_status(job=job, status=JobStatus.PLANNING, options=opts, stage_attempts=0)
            enqueue_advance(job.pk)
            return version
        if action != "accept":
            raise ValidationError(_("Unknown action %(action)r.") % {"action": action})
        if depth is not None:
            chosen, count = depth_options_clean(depth=depth, runs=runs)
            job.options = dict(job.options, depth=chosen, runs=count)
            ResearchJob.objects.filter(pk=job.pk).update(options=job.options)
        version = plan_version_create(job=job, plan=plan, author="user", accepted=True) if edited else latest
        if not edited:
            PlanVersion.objects.filter(pk=latest.pk).update(accepted=True)
        plan_start(job=job, version=version)
        return version


def plan_start(*, job: ResearchJob, version: PlanVersion) -> None:
    """Turn the accepted plan into steps and start scheduling them."""
    plan = Plan.model_validate(version.plan)
    # A processing step that names no dependency waits for the steps before it (graph rule).
    deps = effective_depends_on(plan.steps)
    with transaction.atomic():
        PlanVersion.objects.filter(pk=version.pk).update(accepted=True)
        JobStep.objects.filter(job=job).delete()
        for position, step in enumerate(plan.steps):
            JobStep.objects.create(
                job=job, step_id=step.id, position=position, title=step.title, description=step.description,
                step_type=step.step_type, need_search=step.need_search, depends_on=deps[step.id],
            )
        event_emit(job_id=job.pk, type="plan.accepted", payload={"version": version.number,
                                                                 "steps": [s.id for s in plan.steps]})
        if plan.has_enough_context or not plan.steps:
            job_set_status(job=job, status=JobStatus.REPORTING, title=plan.title[:300], stage_attempts=0)
            enqueue_advance(job.pk)
        else:
            job_set_status(job=job, status=JobStatus.RESEARCHING, title=plan.title[:300], review_deadline=None)
            enqueue_schedule(job.pk)


# --- reports and outputs -------------------------------------------------------------


def report_version_create(*, job: ResearchJob, markdown: str, author: str) -> ReportVersion:
    with transaction.atomic():
        number = job_number_next(job_id=job.pk, model=ReportVersion)
        version = ReportVersion.objects.create(job=job, number=number, author=author, markdown=markdown)
    return version


def report_edit_checked(*, job: ResearchJob, markdown: str,
                        registry_numbers: bool = False) -> tuple[str, dict[str, Any]]:
    """The slow half of an edit: refuse what cannot be saved, then run the reporter's checks.

    The edit goes through the same check as the reporter's text (research.report.check.report_check):
    citations to sources the job does not have and links to pages no tool returned are dropped, and
    the references list is rebuilt from the source registry, so an edit cannot cite a source nobody read.
    Returns the checked Markdown and the check's counts.
    """
    if not job_can(job=job).edit_report:
        raise InvalidAction(_("Only a finished report can be edited."))
    markdown = markdown.replace("\r\n", "\n")  # browsers post textarea lines with CRLF
    if not markdown.strip():
        raise ValidationError(_("The report cannot be empty."))
    # The reporter's checks again (research.report.check): citations resolve through the edit's own
    # references list, unknown ones and links to pages no tool returned go, cited claims are checked
    # against their passages, and the references are renumbered 1..n from the registry.
    sources = [SourceRef(number=s.number, url=s.url, title=s.title, text=s.text, kind=s.kind)
               for s in job.sources.order_by("number")]
    # A user's words are only marked "(unverified)", never cut (remove_sure=False). A `[n]` means entry n
    # of the references list the user saw (the latest version), also when the edit deleted that list;
    # the checked text must fit the budget the edit itself had to meet.
    seen = None if registry_numbers else report_seen_references(job=job)
    try:
        checked = report_check(markdown, sources, locale=job.locale, remove_sure=False, seen=seen,
                               max_chars=REPORT_MAX_CHARS, question=job.question)
    except ReportTooLarge as exc:
        raise ValidationError(
            _("Checked, the report would be %(size)s characters, over the %(limit)s a report may have "
              "(%(marked)s sentences marked unverified). Cite your claims or shorten the edit.")
            % {"size": f"{exc.size:,}", "limit": f"{exc.limit:,}", "marked": f"{exc.marked:,}"}
        ) from exc
    return checked.markdown, checked.summary()


def report_edit_save(*, job: ResearchJob, markdown: str, check: dict[str, Any]) -> ReportVersion:
    """The quick half: store the checked Markdown as a new version and re-render every requested output."""
    with transaction.atomic():
        version = report_version_create(job=job, markdown=markdown, author="user")
        artifact_save_bytes(job=job, kind="md", name="report.md", data=markdown.encode())
        event_emit(job_id=job.pk, type="report.ready",
                   payload={"version": version.number, "author": "user", "check": check})
        if job.renders.exists():
            renders_queue(job=job)
    return version


def report_edit(*, job: ResearchJob, markdown: str, registry_numbers: bool = False) -> ReportVersion:
    """Store the user's edited Markdown, checked as the reporter's text is, as a new version and re-render
    every requested output from it. `registry_numbers`: its [n] are Source numbers (a follow-up answer
    folded in), not entries of the references list the user saw."""
    checked, summary = report_edit_checked(job=job, markdown=markdown, registry_numbers=registry_numbers)
    return report_edit_save(job=job, markdown=checked, check=summary)


def report_edit_submit(*, job: ResearchJob, markdown: str) -> ReportVersion | ReportEditCheck:
    """A report edit from a web request: checked at once up to REPORT_CHECK_INLINE_CHARS, else in a worker.

    The check costs time in proportion to the text (research/textre.py keeps every pattern linear),
    so a size budget is a time budget: an edit over it would hold the web thread, and with it every
    other user's requests, for seconds. It is stored as a ReportEditCheck and checked by a worker;
    the new version appears (a `report.ready` event) when that is done.
    """
    markdown = markdown.replace("\r\n", "\n")
    if len(markdown) <= settings.REPORT_CHECK_INLINE_CHARS:
        return report_edit(job=job, markdown=markdown)
    if not job_can(job=job).edit_report:
        raise InvalidAction(_("Only a finished report can be edited."))
    if not markdown.strip():
        raise ValidationError(_("The report cannot be empty."))
    with transaction.atomic():
        check = ReportEditCheck.objects.create(job=job, markdown=markdown)
        event_emit(job_id=job.pk, type="report.checking", payload={"check": check.pk, "chars": len(markdown)})
        enqueue_report_edit_check(check.pk)
    return check


def report_version_restore(*, job: ResearchJob, number: int) -> ReportVersion | ReportEditCheck | None:
    """Save version `number` again as the newest one; None (nothing saved, nothing counted, nothing
    re-rendered) when it already is the newest. Counts as a report edit (REPORT_EDIT_RATE, per account)."""
    version = job.report_versions.filter(number=number).first()
    if version is None:
        raise InvalidAction(_("There is no version %(n)d.") % {"n": number})
    current = job.report_versions.order_by("-number").first()
    if current is not None and (current.pk == version.pk or current.markdown == version.markdown):
        return None
    ratelimit.ratelimit_account(user=job.owner, scope="report_edit", rate_setting="REPORT_EDIT_RATE")
    return report_edit_submit(job=job, markdown=version.markdown)


def output_rerender(*, job: ResearchJob, kind: str) -> None:
    if kind not in rendered_kinds():
        raise ValidationError(_("Unknown output %(kind)r.") % {"kind": kind})
    if not job_can(job=job).rerender:
        raise InvalidAction(_("Outputs can be re-rendered once the report exists and the job has ended."))
    renders_queue(job=job, kinds=[kind])


def renders_queue(*, job: ResearchJob, kinds: list[str] | None = None, keep_done: bool = False,
                  report_version: int | None = None) -> list[str]:
    """Queue outputs to render from the latest report and move the job to `rendering`.

    The one place that queues renders (report stage, report edit, re-render, retry). `kinds` None =
    every output the job has; a kind it does not have yet is added. `keep_done` leaves outputs that
    already rendered alone (retry). Returns the kinds queued.
    """
    with transaction.atomic():
        for kind in kinds or []:
            OutputRender.objects.get_or_create(job=job, kind=kind)
        rows = job.renders.all() if kinds is None else job.renders.filter(kind__in=kinds)
        if keep_done:
            rows = rows.exclude(status=OutputStatus.DONE)
        queued = sorted(rows.values_list("kind", flat=True))
        reset: dict[str, Any] = {"status": OutputStatus.PENDING, "error": "", "attempts": 0}
        if report_version is not None:
            reset["report_version"] = report_version
        rows.update(**reset)
        job_set_status(job=job, status=JobStatus.RENDERING, error="")
        for kind in queued:
            enqueue_render(job.pk, kind)
    return queued
