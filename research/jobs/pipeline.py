"""Worker-side services: run a job's stages, its steps and its outputs. Tasks call these by id.

Stages run in order (coordinate → investigate → plan → [review] → research → report → render).
Each unit holds a lease while it works; reap_stale_work() restarts units whose worker died.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from research.agents.citations import finalize_report
from research.agents.engines import get_engine
from research.agents.graph import validate_plan
from research.agents.types import BudgetExceeded, Engine, JobCancelled, Plan, PlanStep, StepResult
from research.jobs import storage
from research.jobs.context import JobContext
from research.jobs.events import event_emit
from research.jobs.leases import lease_deadline, lease_kept
from research.jobs.models import (
    TERMINAL_STATUSES,
    WORKING_STATUSES,
    Artifact,
    JobStatus,
    JobStep,
    OutputRender,
    OutputStatus,
    ResearchJob,
    StepStatus,
)
from research.jobs.services import (
    _enqueue_on_commit,
    job_set_status,
    plan_start,
    plan_version_create,
    report_version_create,
)

logger = logging.getLogger(__name__)

def _now() -> Any:
    return timezone.now()


def _queue_grace() -> timedelta:
    """A queued unit not picked up within this time is re-sent (its message may have been lost)."""
    return timedelta(seconds=settings.STEP_QUEUE_GRACE_S)


def _still_wanted(job_id: int) -> None:
    """Call inside the write transaction that ends a stage: raise JobCancelled if the job was cancelled
    (or ended) while the stage worked, so a stage finishing late never moves a job out of `cancelled`."""
    row = ResearchJob.objects.select_for_update().filter(pk=job_id).values("status", "cancel_requested").first()
    if row is None or row["cancel_requested"] or row["status"] in TERMINAL_STATUSES:
        raise JobCancelled("The job was cancelled.")


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return text if len(text) < 1500 else text[:1500] + "…"


def _engine_for(job: ResearchJob) -> Engine:
    return get_engine(job.engine if job.engine in ("llm", "offline") else "offline")


# --- artifacts ---------------------------------------------------------------------------------


def artifact_save_file(*, job: ResearchJob, kind: str, name: str, path: Path) -> Artifact:
    """Upload a file this worker made (in its own temp dir) to the storage and record it."""
    key = storage.artifact_key(job.pk, name)
    size, sha256 = storage.file_store(key=key, path=path)
    art, _ = Artifact.objects.update_or_create(
        job=job, name=name, defaults={"kind": kind, "file": key, "size": size, "sha256": sha256},
    )
    return art


def artifact_save_bytes(*, job: ResearchJob, kind: str, name: str, data: bytes) -> Artifact:
    key = storage.artifact_key(job.pk, name)
    size, sha256 = storage.file_store(key=key, data=data)
    art, _ = Artifact.objects.update_or_create(
        job=job, name=name, defaults={"kind": kind, "file": key, "size": size, "sha256": sha256},
    )
    return art


# --- stages ---------------------------------------------------------------------------------------


def _stage_claim(job_id: int) -> ResearchJob | None:
    with transaction.atomic():
        job = ResearchJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status not in WORKING_STATUSES:
            return None
        if job.stage_lease_until and job.stage_lease_until > _now():
            return None  # another worker holds this stage
        if job.stage_attempts >= settings.STEP_MAX_ATTEMPTS:
            job_set_status(job=job, status=JobStatus.FAILED,
                           error=f"The {job.status} stage was interrupted {job.stage_attempts} times "
                                 f"(its worker kept dying); giving up.")
            return None
        fields: dict[str, Any] = {"stage_lease_until": _now() + lease_deadline(),
                                  "stage_attempts": job.stage_attempts + 1}
        if job.started_at is None:
            fields["started_at"] = _now()
        ResearchJob.objects.filter(pk=job_id).update(**fields)
        for key, value in fields.items():
            setattr(job, key, value)
        return job


def _stage_release(job_id: int) -> None:
    ResearchJob.objects.filter(pk=job_id).update(stage_lease_until=None, stage_attempts=0)


def job_advance(*, job_id: int) -> None:
    """Run the job's current stage and the ones after it, until it waits (review, steps, renders) or ends."""
    job = _stage_claim(job_id)
    if job is None:
        return
    with lease_kept(ResearchJob, job_id, "stage_lease_until"):
        try:
            for _ in range(10):
                job.refresh_from_db()
                if job.cancel_requested and not job.is_terminal:
                    job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
                    break
                handler = _STAGES.get(job.status)
                if handler is None:
                    break
                handler(job)
        except JobCancelled:
            job.refresh_from_db()
            if not job.is_terminal:
                job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
        except SoftTimeLimitExceeded:
            job.refresh_from_db()
            job_set_status(job=job, status=JobStatus.FAILED,
                           error=f"The {job.status} stage ran over its time limit "
                                 f"({settings.CELERY_TASK_SOFT_TIME_LIMIT} s).")
        except Exception as exc:  # any failure is shown as a failure, with its reason
            logger.exception("job %s failed in stage %s", job_id, job.status)
            job.refresh_from_db()
            if not job.is_terminal:
                job_set_status(job=job, status=JobStatus.FAILED, error=f"{job.status} failed: {_short(exc)}")
        finally:
            _stage_release(job_id)


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
    decision = _engine_for(job).coordinate(ctx)
    locale = job.options.get("locale") or "auto"
    locale = decision.locale if locale == "auto" else locale
    with transaction.atomic():
        _still_wanted(job.pk)
        ResearchJob.objects.filter(pk=job.pk).update(locale=locale)
        job.locale = locale
        if decision.action == "answer":
            job_set_status(job=job, status=JobStatus.DONE, answer=decision.answer, title=job.question[:120])
            return
        nxt = JobStatus.INVESTIGATING if job.options.get("background") else JobStatus.PLANNING
        job_set_status(job=job, status=nxt, locale=locale)


def _stage_investigate(job: ResearchJob) -> None:
    ctx = JobContext(job)
    try:
        hits = ctx.search(job.question, max_results=6)
    except Exception as exc:  # background search is optional; planning goes on without it
        hits = []
        event_emit(job_id=job.pk, type="step.activity", payload={"kind": "background_failed", "error": _short(exc)})
    background = "\n".join(f"- {h.title}: {h.snippet}" for h in hits)[:6000]
    opts = dict(job.options, background_text=background)
    with transaction.atomic():
        _still_wanted(job.pk)
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
    plan = _engine_for(job).plan(ctx, max_steps=max_steps, background=str(job.options.get("background_text", "")),
                                 feedback=feedback, previous=previous)
    plan.locale = plan.locale or job.locale
    errors = validate_plan(plan, max_steps=max_steps)
    if errors:
        raise ValueError("the planner produced an invalid plan: " + "; ".join(errors))
    with transaction.atomic():
        _still_wanted(job.pk)
        version = plan_version_create(job=job, plan=plan, author="planner", feedback=feedback)
        opts = {k: v for k, v in job.options.items() if k not in ("replan_feedback", "replan_base")}
        ResearchJob.objects.filter(pk=job.pk).update(options=opts, title=plan.title[:300])
        job.options = opts
        if job.options.get("auto_accept"):
            plan_start(job=job, version=version)
        else:
            deadline = None
            if settings.JOB_REVIEW_TIMEOUT_S:
                deadline = _now() + timedelta(seconds=settings.JOB_REVIEW_TIMEOUT_S)
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


def _step_results(job: ResearchJob, ids: list[str] | None = None) -> list[StepResult]:
    steps = job.steps.filter(status=StepStatus.DONE).order_by("position")
    if ids is not None:
        steps = steps.filter(step_id__in=ids)
    return [StepResult(step_id=s.step_id, title=s.title, report_md=s.result_md,
                       figures=list(s.result.get("figures", [])), notes=dict(s.result.get("notes", {})))
            for s in steps]


def _accepted_plan(job: ResearchJob) -> Plan:
    version = job.plan_versions.filter(accepted=True).order_by("-number").first()
    if version is None:
        raise ValueError("no accepted plan")
    return Plan.model_validate(version.plan)


def _stage_report(job: ResearchJob) -> None:
    ctx = JobContext(job)
    plan = _accepted_plan(job)
    results = _step_results(job)
    failed = list(job.steps.exclude(status=StepStatus.DONE).values_list("title", "error"))
    batcher = _DeltaBatcher(job.pk)
    event_emit(job_id=job.pk, type="report.started", payload={"steps": len(results), "failed_steps": len(failed)})
    body = _engine_for(job).report(ctx, plan, results, style=job.options.get("style", "academic"), on_delta=batcher)
    batcher.flush()
    if not body or not body.strip():
        raise ValueError("the reporter wrote an empty report")
    final = finalize_report(body, ctx.sources(), locale=job.locale)
    with transaction.atomic():
        _still_wanted(job.pk)
        version = report_version_create(job=job, markdown=final.markdown, author="reporter")
        artifact_save_bytes(job=job, kind="md", name="report.md", data=final.markdown.encode())
        ResearchJob.objects.filter(pk=job.pk).update(invalid_citations=final.removed)
        event_emit(job_id=job.pk, type="report.ready",
                   payload={"version": version.number, "cited": final.cited, "removed_citations": final.removed,
                            "chars": len(final.markdown)})
        event_emit(job_id=job.pk, type="artifact.ready",
                   payload={"kind": "md", "name": "report.md", "size": len(final.markdown.encode())})
        kinds = list(job.renders.values_list("kind", flat=True))
        if kinds:
            job.renders.update(status=OutputStatus.PENDING, error="", attempts=0, report_version=version.number)
            job_set_status(job=job, status=JobStatus.RENDERING)
            for kind in kinds:
                _enqueue_on_commit("render", job.pk, kind)
        else:
            job_set_status(job=job, status=JobStatus.DONE)


_STAGES: dict[str, Callable[[ResearchJob], None]] = {
    JobStatus.QUEUED: _stage_coordinate,
    JobStatus.COORDINATING: _stage_coordinate,
    JobStatus.INVESTIGATING: _stage_investigate,
    JobStatus.PLANNING: _stage_plan,
    JobStatus.REPORTING: _stage_report,
}


# --- steps ----------------------------------------------------------------------------------------


def job_schedule(*, job_id: int) -> None:
    """Queue every step whose dependencies are done; move on to the reporter when all steps ended."""
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=_now())  # serialise schedulers of one job
        job = ResearchJob.objects.get(pk=job_id)
        if job.status != JobStatus.RESEARCHING:
            return
        steps = list(job.steps.order_by("position"))
        active = [s for s in steps if s.status in (StepStatus.QUEUED, StepStatus.RUNNING)]
        if job.cancel_requested:
            for s in steps:  # each step that will not run says so in the event log
                if s.status == StepStatus.PENDING:
                    JobStep.objects.filter(pk=s.pk).update(status=StepStatus.CANCELLED)
                    event_emit(job_id=job_id, type="step.cancelled", payload={"step": s.step_id})
            if not active:
                job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
            return
        by_id = {s.step_id: s for s in steps}
        changed = True
        while changed:  # a failed step fails the steps that depend on it
            changed = False
            for s in steps:
                if s.status != StepStatus.PENDING:
                    continue
                bad = [d for d in s.depends_on if by_id.get(d) and by_id[d].status in
                       (StepStatus.FAILED, StepStatus.CANCELLED)]
                if bad:
                    s.status, s.error = StepStatus.FAILED, f"skipped: it depends on step {bad[0]}, which failed"
                    JobStep.objects.filter(pk=s.pk).update(status=s.status, error=s.error)
                    event_emit(job_id=job_id, type="step.failed", payload={"step": s.step_id, "error": s.error})
                    changed = True
        limit = int(job.options.get("step_concurrency") or 0) or settings.JOB_STEP_CONCURRENCY or len(steps)
        slots = max(0, limit - len(active))
        for s in steps:
            if slots <= 0:
                break
            if s.status == StepStatus.PENDING and all(
                by_id.get(d) is None or by_id[d].status == StepStatus.DONE for d in s.depends_on
            ):
                JobStep.objects.filter(pk=s.pk).update(status=StepStatus.QUEUED, lease_until=_now() + _queue_grace())
                s.status = StepStatus.QUEUED
                event_emit(job_id=job_id, type="step.queued", payload={"step": s.step_id})
                _enqueue_on_commit("step", job_id, s.step_id)
                slots -= 1
        if all(s.status in (StepStatus.DONE, StepStatus.FAILED, StepStatus.CANCELLED) for s in steps):
            if any(s.status == StepStatus.DONE for s in steps):
                job_set_status(job=job, status=JobStatus.REPORTING, stage_attempts=0)
                _enqueue_on_commit("advance", job_id)
            else:
                reasons = "; ".join(f"{s.step_id}: {s.error}" for s in steps if s.error)[:3000]
                job_set_status(job=job, status=JobStatus.FAILED, error=f"Every step failed. {reasons}")


def _step_claim(job_id: int, step_id: str) -> tuple[ResearchJob, JobStep, str] | None:
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=_now())
        job = ResearchJob.objects.filter(pk=job_id).first()
        step = JobStep.objects.filter(job_id=job_id, step_id=step_id).first()
        if job is None or step is None:
            return None
        if step.status in (StepStatus.DONE, StepStatus.FAILED, StepStatus.CANCELLED):
            return None  # a duplicate delivery is a no-op
        if step.status == StepStatus.RUNNING and step.lease_until and step.lease_until > _now():
            return None  # someone is running it right now
        if job.status != JobStatus.RESEARCHING or job.cancel_requested:
            JobStep.objects.filter(pk=step.pk).update(status=StepStatus.CANCELLED)
            event_emit(job_id=job_id, type="step.cancelled", payload={"step": step_id})
            _enqueue_on_commit("schedule", job_id)
            return None
        if step.attempts >= settings.STEP_MAX_ATTEMPTS:
            error = f"gave up after {step.attempts} attempts: the worker running it was lost each time"
            JobStep.objects.filter(pk=step.pk).update(status=StepStatus.FAILED, error=error, finished_at=_now())
            event_emit(job_id=job_id, type="step.failed", payload={"step": step_id, "error": error})
            _enqueue_on_commit("schedule", job_id)
            return None
        token = uuid.uuid4().hex
        JobStep.objects.filter(pk=step.pk).update(
            status=StepStatus.RUNNING, attempts=step.attempts + 1, lease_token=token,
            lease_until=_now() + lease_deadline(), started_at=_now(), error="",
        )
        step.attempts += 1
        event_emit(job_id=job_id, type="step.started",
                   payload={"step": step_id, "title": step.title, "type": step.step_type, "attempt": step.attempts})
        return job, step, token


def _step_finish(job_id: int, step: JobStep, token: str, **fields: Any) -> bool:
    """Write the outcome only if we still hold the lease (the reaper may have handed the step on)."""
    with transaction.atomic():
        n = JobStep.objects.filter(pk=step.pk, lease_token=token, status=StepStatus.RUNNING).update(
            finished_at=_now(), lease_until=None, **fields
        )
        if n:
            payload: dict[str, Any] = {"step": step.step_id}
            if fields.get("status") == StepStatus.DONE:
                payload.update({"figures": fields.get("result", {}).get("figures", []),
                                "chars": len(fields.get("result_md", ""))})
                event_emit(job_id=job_id, type="step.completed", payload=payload)
            elif fields.get("status") == StepStatus.CANCELLED:
                event_emit(job_id=job_id, type="step.cancelled", payload=payload)
            else:
                event_emit(job_id=job_id, type="step.failed", payload={**payload, "error": fields.get("error", "")})
        _enqueue_on_commit("schedule", job_id)
    return bool(n)


def step_run(*, job_id: int, step_id: str) -> None:
    claimed = _step_claim(job_id, step_id)
    if claimed is None:
        return
    job, step, token = claimed
    with lease_kept(JobStep, step.pk, "lease_until", token_field="lease_token", token=token):  # noqa: S106
        try:
            ctx = JobContext(job, step_id=step_id)
            plan = _accepted_plan(job)
            plan_step = PlanStep(id=step.step_id, title=step.title, description=step.description,
                                 step_type=step.step_type,  # type: ignore[arg-type]
                                 need_search=step.need_search, depends_on=list(step.depends_on))
            prior = _step_results(job, list(step.depends_on))
            engine = _engine_for(job)
            ctx.check_cancelled()
            if step.step_type == "processing":
                result = engine.process(ctx, plan_step, plan, prior)
            else:
                result = engine.research(ctx, plan_step, plan, prior)
            if not result.report_md.strip():
                raise ValueError("the step produced an empty report")
            _step_finish(job_id, step, token, status=StepStatus.DONE, result_md=result.report_md,
                         result={"figures": result.figures, "notes": _jsonable(result.notes)})
        except JobCancelled:
            _step_finish(job_id, step, token, status=StepStatus.CANCELLED, error="cancelled")
        except SoftTimeLimitExceeded:
            _step_finish(job_id, step, token, status=StepStatus.FAILED,
                         error=f"ran over its time limit ({settings.CELERY_TASK_SOFT_TIME_LIMIT} s)")
        except BudgetExceeded as exc:
            _step_finish(job_id, step, token, status=StepStatus.FAILED, error=_short(exc))
        except Exception as exc:
            logger.exception("step %s of job %s failed", step_id, job_id)
            _step_finish(job_id, step, token, status=StepStatus.FAILED, error=_short(exc))


def _jsonable(value: Any) -> Any:
    """Step notes as the JSON field will store them; anything not JSON becomes its str()."""
    return json.loads(json.dumps(value, default=str))


# --- outputs ----------------------------------------------------------------------------------------


def _render_claim(job_id: int, kind: str) -> OutputRender | None:
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=_now())
        row = OutputRender.objects.filter(job_id=job_id, kind=kind).first()
        if row is None or row.status in (OutputStatus.DONE, OutputStatus.FAILED):
            return None
        if row.status == OutputStatus.RUNNING and row.lease_until and row.lease_until > _now():
            return None
        if row.attempts >= settings.STEP_MAX_ATTEMPTS:
            OutputRender.objects.filter(pk=row.pk).update(
                status=OutputStatus.FAILED, error=f"gave up after {row.attempts} attempts (worker lost)")
            job_finish_if_rendered(job_id=job_id)
            return None
        OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.RUNNING, attempts=row.attempts + 1,
                                                      lease_until=_now() + lease_deadline())
        event_emit(job_id=job_id, type="artifact.started", payload={"kind": kind})
        return row


def _render(job: ResearchJob, kind: str, markdown: str, workdir: Path) -> list[tuple[str, str, Path]]:
    """Render one output into workdir; returns (kind, name, path) for each file made."""
    # Reports refer to figures/<name>: fetch the job's figures from the storage into this worker's temp dir.
    figures_dir = storage.files_fetch(job.pk, workdir / "job")
    engine = _engine_for(job)
    ctx = JobContext(job)
    if kind == "pdf":
        from research.render.pdf import render_pdf

        out = render_pdf(markdown, workdir / "report.pdf", title=job.title or None, figures_dir=figures_dir,
                         locale=job.locale)
        return [("pdf", "report.pdf", out)]
    if kind == "pptx":
        from research.render.pptx import render_pptx

        outline = engine.slide_outline(ctx, markdown)
        out = render_pptx(markdown, workdir / "slides.pptx", outline=outline, figures_dir=figures_dir,
                          locale=job.locale)
        return [("pptx", "slides.pptx", out)]
    if kind == "podcast":
        from research.render.podcast import render_podcast

        script = engine.podcast_script(ctx, markdown)
        res = render_podcast(script, workdir, basename="podcast")
        return [("podcast", "podcast.mp3", res.mp3), ("transcript", "podcast.txt", res.transcript_txt),
                ("vtt", "podcast.vtt", res.transcript_vtt)]
    raise ValueError(f"unknown output {kind}")


def output_render(*, job_id: int, kind: str) -> None:
    row = _render_claim(job_id, kind)
    if row is None:
        return
    job = ResearchJob.objects.get(pk=job_id)
    version = job.report_versions.order_by("-number").first()
    with lease_kept(OutputRender, row.pk, "lease_until"):
        try:
            if version is None:
                raise ValueError("there is no report to render")
            started = time.monotonic()
            with storage.work_dir(f"render-{job_id}-{kind}") as tmp:
                made = _render(job, kind, version.markdown, tmp)
                with transaction.atomic():
                    for art_kind, name, path in made:
                        art = artifact_save_file(job=job, kind=art_kind, name=name, path=path)
                        event_emit(job_id=job_id, type="artifact.ready",
                                   payload={"kind": art_kind, "name": name, "size": art.size,
                                            "seconds": round(time.monotonic() - started, 2)})
                    OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.DONE, error="",
                                                                  lease_until=None, report_version=version.number)
        except Exception as exc:
            logger.exception("rendering %s of job %s failed", kind, job_id)
            with transaction.atomic():
                OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.FAILED, error=_short(exc),
                                                              lease_until=None)
                event_emit(job_id=job_id, type="artifact.failed", payload={"kind": kind, "error": _short(exc)})
    job_finish_if_rendered(job_id=job_id)


def job_finish_if_rendered(*, job_id: int) -> None:
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=_now())
        job = ResearchJob.objects.get(pk=job_id)
        if job.status != JobStatus.RENDERING:
            return
        rows = list(job.renders.all())
        if any(r.status in (OutputStatus.PENDING, OutputStatus.RUNNING) for r in rows):
            return
        failed = [r for r in rows if r.status == OutputStatus.FAILED]
        if failed:
            error = "; ".join(f"{r.kind} failed: {r.error}" for r in failed)
            job_set_status(job=job, status=JobStatus.FAILED, error=error)
        else:
            job_set_status(job=job, status=JobStatus.DONE, error="")


# --- the reaper -------------------------------------------------------------------------------------------


def reap_stale_work() -> dict[str, int]:
    """Re-queue units whose worker died (lapsed lease) or whose message was lost; time out reviews."""
    now = _now()
    counts = {"stages": 0, "steps": 0, "renders": 0, "reviews": 0}
    for job_id in ResearchJob.objects.filter(status__in=list(WORKING_STATUSES)).filter(
        stage_lease_until__lt=now
    ).values_list("pk", flat=True):
        counts["stages"] += 1
        _enqueue_now("advance", job_id)
    # Working jobs nobody claimed at all (message lost before any worker saw it).
    stale_created = now - _queue_grace()
    for job_id in ResearchJob.objects.filter(status__in=list(WORKING_STATUSES), stage_lease_until__isnull=True,
                                             updated__lt=stale_created).values_list("pk", flat=True):
        counts["stages"] += 1
        _enqueue_now("advance", job_id)
    for step in JobStep.objects.filter(status__in=[StepStatus.RUNNING, StepStatus.QUEUED], lease_until__lt=now,
                                       job__status=JobStatus.RESEARCHING):
        with transaction.atomic():
            n = JobStep.objects.filter(pk=step.pk, status=step.status, lease_until=step.lease_until).update(
                status=StepStatus.QUEUED, lease_until=now + _queue_grace())
            if n:
                counts["steps"] += 1
                if step.status == StepStatus.RUNNING:
                    event_emit(job_id=step.job_id, type="step.requeued",
                               payload={"step": step.step_id, "attempt": step.attempts,
                                        "reason": "its worker stopped renewing the lease"})
                _enqueue_on_commit("step", step.job_id, step.step_id)
    for row in OutputRender.objects.filter(status=OutputStatus.RUNNING, lease_until__lt=now):
        if OutputRender.objects.filter(pk=row.pk, status=OutputStatus.RUNNING, lease_until=row.lease_until).update(
            status=OutputStatus.PENDING
        ):
            counts["renders"] += 1
            _enqueue_now("render", row.job_id, row.kind)
    for row in OutputRender.objects.filter(status=OutputStatus.PENDING, job__status=JobStatus.RENDERING,
                                           updated__lt=stale_created):
        OutputRender.objects.filter(pk=row.pk).update(updated=now)
        _enqueue_now("render", row.job_id, row.kind)
    for job in ResearchJob.objects.filter(status=JobStatus.AWAITING_REVIEW, review_deadline__lt=now):
        counts["reviews"] += 1
        with transaction.atomic():
            job_set_status(job=job, status=JobStatus.CANCELLED, error="The plan was not reviewed in time.")
    # Researching jobs whose steps all ended but whose scheduler message was lost.
    for job_id in ResearchJob.objects.filter(status=JobStatus.RESEARCHING, updated__lt=stale_created).values_list(
        "pk", flat=True
    ):
        _enqueue_now("schedule", job_id)
    return counts


def _enqueue_now(what: str, job_id: int, arg: str | None = None) -> None:
    with transaction.atomic():
        _enqueue_on_commit(what, job_id, arg)

