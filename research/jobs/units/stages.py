"""The job's stages, run in order by one unit (job_advance): coordinate → investigate → plan →
[review] → (steps, see steps.py) → report. Each stage moves the job on through states.job_set_status.

A stage holds the job's stage lease while it works; reaper.py restarts stages whose worker died.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction

from research.agents.citations import finalize_report
from research.agents.graph import validate_plan
from research.agents.types import JobCancelled, Plan
from research.agents.verify import model_judge, report_check
from research.jobs import fairness
from research.jobs.artifacts import artifact_save_bytes
from research.jobs.events import event_emit
from research.jobs.models import WORKING_STATUSES, JobStatus, ResearchJob, StepStatus
from research.jobs.services import plan_start, plan_version_create, renders_queue, report_version_create
from research.jobs.states import job_set_status
from research.jobs.units.common import accepted_plan, engine_for, now, short, step_results, still_wanted
from research.jobs.units.context import JobContext
from research.jobs.units.leases import LeaseLost, lease_deadline, lease_kept

logger = logging.getLogger(__name__)


def stage_claim(job_id: int) -> tuple[ResearchJob, str] | None:
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status not in WORKING_STATUSES:
            return None
        if job.stage_lease_until and job.stage_lease_until > now():
            return None  # another worker holds this stage
        if job.status == JobStatus.QUEUED and not job.cancel_requested and fairness.jobs_capped():
            # Fair share (research/jobs/fairness.py): start only within the owner's running-jobs cap,
            # deciding and moving on under the owner's lock; otherwise wait (a job's end sends it again).
            fairness.owner_lock(job.owner_id)
            if not fairness.job_may_start(job):
                fairness.job_wait(job)
                ResearchJob.objects.filter(pk=job_id).update(updated=now())  # the reaper waits a grace first
                return None
            job_set_status(job=job, status=JobStatus.COORDINATING)
        if job.stage_attempts >= settings.STEP_MAX_ATTEMPTS:
            job_set_status(job=job, status=JobStatus.FAILED,
                           error=f"The {job.status} stage was interrupted {job.stage_attempts} times "
                                 f"(its worker kept dying); giving up.")
            return None
        token = uuid.uuid4().hex
        fields: dict[str, Any] = {"stage_lease_until": now() + lease_deadline(),
                                  "stage_attempts": job.stage_attempts + 1, "stage_lease_token": token}
        if job.started_at is None:
            fields["started_at"] = now()
        ResearchJob.objects.filter(pk=job_id).update(**fields)
        for key, value in fields.items():
            setattr(job, key, value)
        return job, token


def stage_release(job_id: int, token: str) -> None:
    """Give the stage lease back, unless it already passed to another worker (then it is theirs)."""
    ResearchJob.objects.filter(pk=job_id, stage_lease_token=token).update(
        stage_lease_until=None, stage_attempts=0, stage_lease_token="")


def _holds(job_id: int, token: str) -> bool:
    return ResearchJob.objects.filter(pk=job_id, stage_lease_token=token).exists()


def job_advance(*, job_id: int) -> None:
    """Run the job's current stage and the ones after it, until it waits (review, steps, renders) or ends."""
    claimed = stage_claim(job_id)
    if claimed is None:
        return
    job, token = claimed
    with lease_kept(ResearchJob, job_id, "stage_lease_until", token_field="stage_lease_token",  # noqa: S106
                    token=token):
        try:
            for _ in range(10):
                job.refresh_from_db()
                if job.stage_lease_token != token:
                    raise LeaseLost(f"the stage of job {job_id} passed to another worker")
                if job.cancel_requested and not job.is_terminal:
                    job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
                    break
                handler = STAGES.get(job.status)
                if handler is None:
                    break
                handler(job)
        except LeaseLost:
            # Another worker took the stage over (this one was too slow to renew): it writes the outcome.
            logger.warning("job %s: the %s stage passed to another worker; this one stops", job_id, job.status)
        except JobCancelled:
            job.refresh_from_db()
            if _holds(job_id, token) and not job.is_terminal:
                job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
        except SoftTimeLimitExceeded:
            job.refresh_from_db()
            if _holds(job_id, token) and not job.is_terminal:
                job_set_status(job=job, status=JobStatus.FAILED,
                               error=f"The {job.status} stage ran over its time limit "
                                     f"({settings.CELERY_TASK_SOFT_TIME_LIMIT} s).")
        except Exception as exc:  # any failure is shown as a failure, with its reason
            logger.exception("job %s failed in stage %s", job_id, job.status)
            job.refresh_from_db()
            if _holds(job_id, token) and not job.is_terminal:
                job_set_status(job=job, status=JobStatus.FAILED, error=f"{job.status} failed: {short(exc)}")
        finally:
            stage_release(job_id, token)


def _stage_coordinate(job: ResearchJob) -> None:
    if job.status == JobStatus.QUEUED:
        job_set_status(job=job, status=JobStatus.COORDINATING)
    if job.engine not in ("llm", "offline"):
        from research.llm.factory import server_available

        engine = "llm" if server_available(settings.LLM_BASE_URL) else "offline"
        ResearchJob.objects.filter(pk=job.pk).update(engine=engine)
        job.engine = engine
        reason = "model server answered" if engine == "llm" else "no model server answered"
        event_emit(job_id=job.pk, type="job.engine", payload={"engine": engine, "reason": reason})
    ctx = JobContext(job)
    decision = engine_for(job).coordinate(ctx)
    locale = job.options.get("locale") or "auto"
    locale = decision.locale if locale == "auto" else locale
    with transaction.atomic():
        still_wanted(job.pk)
        ResearchJob.objects.filter(pk=job.pk).update(locale=locale)
        job.locale = locale
        if decision.action == "answer" and job.options.get("direct_answer", True):
            job_set_status(job=job, status=JobStatus.DONE, answer=decision.answer, title=job.question[:120])
            return
        if decision.action == "clarify" and decision.questions and "clarifications" not in job.options:
            # Wait for the user like plan review: no worker is held (see conversation.py).
            opts = dict(job.options, clarify_questions=decision.questions)
            event_emit(job_id=job.pk, type="clarify.asked", payload={"questions": decision.questions})
            job_set_status(job=job, status=JobStatus.AWAITING_CLARIFICATION, options=opts)
            return
        nxt = JobStatus.INVESTIGATING if job.options.get("background") else JobStatus.PLANNING
        job_set_status(job=job, status=nxt, locale=locale)


def _stage_investigate(job: ResearchJob) -> None:
    ctx = JobContext(job)
    try:
        hits = ctx.search(job.question, max_results=6)
    except Exception as exc:  # background search is optional; planning goes on without it
        hits = []
        event_emit(job_id=job.pk, type="step.activity", payload={"kind": "background_failed", "error": short(exc)})
    background = "\n".join(f"- {h.title}: {h.snippet}" for h in hits)[:6000]
    opts = dict(job.options, background_text=background)
    with transaction.atomic():
        still_wanted(job.pk)
        job_set_status(job=job, status=JobStatus.PLANNING, options=opts)


def _stage_plan(job: ResearchJob) -> None:
    ctx = JobContext(job)
    feedback = str(job.options.get("replan_feedback") or "")
    previous: Plan | None = None
    base = job.options.get("replan_base")
    if base:
        version = job.plan_versions.filter(number=base).first()
        previous = Plan.model_validate(version.plan) if version else None
    max_steps = int(job.options.get("max_steps", settings.JOB_DEFAULT_STEPS))
    plan = engine_for(job).plan(ctx, max_steps=max_steps, background=str(job.options.get("background_text", "")),
                                 feedback=feedback, previous=previous)
    plan.locale = plan.locale or job.locale
    errors = validate_plan(plan, max_steps=max_steps)
    if errors:
        raise ValueError("the planner produced an invalid plan: " + "; ".join(errors))
    if not job.options.get("auto_accept"):  # warn on the plan form, before the user accepts
        from research.jobs.search_check import search_check_emit

        search_check_emit(job=job)
    with transaction.atomic():
        still_wanted(job.pk)
        version = plan_version_create(job=job, plan=plan, author="planner", feedback=feedback)
        opts = {k: v for k, v in job.options.items() if k not in ("replan_feedback", "replan_base")}
        ResearchJob.objects.filter(pk=job.pk).update(options=opts, title=plan.title[:300])
        job.options = opts
        if job.options.get("auto_accept"):
            plan_start(job=job, version=version)
        else:
            deadline = None
            if settings.JOB_REVIEW_TIMEOUT_S:
                deadline = now() + timedelta(seconds=settings.JOB_REVIEW_TIMEOUT_S)
            job_set_status(job=job, status=JobStatus.AWAITING_REVIEW, review_deadline=deadline)


class _DeltaBatcher:
    """Batch report tokens into report.delta events: at most ~4 events a second."""

    def __init__(self, job_id: int, interval: float = 0.25, max_chars: int = 400) -> None:
        self.job_id, self.interval, self.max_chars = job_id, interval, max_chars
        self.buf: list[str] = []
        self.size = 0
        self.last = time.monotonic()

    def __call__(self, text: str) -> None:
        if not text:
            return
        self.buf.append(text)
        self.size += len(text)
        if self.size >= self.max_chars or time.monotonic() - self.last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            event_emit(job_id=self.job_id, type="report.delta", payload={"text": "".join(self.buf)})
        self.buf, self.size, self.last = [], 0, time.monotonic()


def _stage_report(job: ResearchJob) -> None:
    ctx = JobContext(job)
    plan = accepted_plan(job)
    results = step_results(job)
    failed = list(job.steps.exclude(status=StepStatus.DONE).values_list("title", "error"))
    batcher = _DeltaBatcher(job.pk)
    event_emit(job_id=job.pk, type="report.started", payload={"steps": len(results), "failed_steps": len(failed)})
    body = engine_for(job).report(ctx, plan, results, style=job.options.get("style", "academic"), on_delta=batcher)
    batcher.flush()
    if not body or not body.strip():
        raise ValueError("the reporter wrote an empty report")
    sources = ctx.sources()
    final = finalize_report(body, sources, locale=job.locale, mark_dropped=True)
    # Claims against their cited passages, links to unregistered pages, gapless numbering.
    # The model as a second opinion on claims the lexical check cannot pass (settings.VERIFY_MODEL_JUDGE).
    use_judge = job.engine == "llm" and settings.VERIFY_MODEL_JUDGE
    judge = model_judge(ctx.llm, job.locale) if use_judge else None
    # What processing steps computed (sandbox output) may be stated without a citation.
    computed = {s.id for s in plan.steps if s.step_type == "processing"}
    evidence = [r.report_md for r in results if r.step_id in computed]
    checked = report_check(final.markdown, sources, locale=job.locale, judge=judge, evidence=evidence)
    final.markdown, final.cited = checked.markdown, checked.cited
    with transaction.atomic():
        still_wanted(job.pk)
        version = report_version_create(job=job, markdown=final.markdown, author="reporter")
        artifact_save_bytes(job=job, kind="md", name="report.md", data=final.markdown.encode())
        ResearchJob.objects.filter(pk=job.pk).update(invalid_citations=final.removed)
        event_emit(job_id=job.pk, type="report.ready",
                   payload={"version": version.number, "cited": final.cited, "removed_citations": final.removed,
                            "chars": len(final.markdown), "check": checked.summary()})
        event_emit(job_id=job.pk, type="artifact.ready",
                   payload={"kind": "md", "name": "report.md", "size": len(final.markdown.encode())})
        if job.renders.exists():
            renders_queue(job=job, report_version=version.number)
        else:
            job_set_status(job=job, status=JobStatus.DONE)


STAGES: dict[str, Callable[[ResearchJob], None]] = {
    JobStatus.QUEUED: _stage_coordinate,
    JobStatus.COORDINATING: _stage_coordinate,
    JobStatus.INVESTIGATING: _stage_investigate,
    JobStatus.PLANNING: _stage_plan,
    JobStatus.REPORTING: _stage_report,
}
