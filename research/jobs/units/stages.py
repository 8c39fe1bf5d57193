"""The job's stages, run in order by one unit (job_advance): coordinate → investigate → plan →
[review] → (steps, see steps.py) → report. Each stage moves the job on through states.job_set_status.

A stage holds the job's stage lease (the protocol of lease.py over the job row's `stage_*` columns) while it
works; reaper.py restarts stages whose worker died.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction

from research.agents.graph import validate_plan
from research.agents.types import JobCancelled, Plan
from research.jobs import fairness
from research.jobs.artifacts import artifact_save_bytes
from research.jobs.dispatch import enqueue_advance
from research.jobs.events import event_emit
from research.jobs.models import TERMINAL_STATUSES, WORKING_STATUSES, JobStatus, ResearchJob, StepStatus
from research.jobs.options import options_with_stage, options_without_stage
from research.jobs.services import plan_start, plan_version_create, renders_queue, report_version_create
from research.jobs.states import STAGES_BY_STATUS, job_set_status
from research.jobs.units.common import accepted_plan, engine_for, now, queue_grace, short, step_results
from research.jobs.units.context import JobContext
from research.jobs.units.lease import Claim, LeaseLost, Outcome, UnitKind, lease_check, unit_run
from research.report.check import model_judge, model_relevance_judge, report_check
from research.report.citations import finalize_report

logger = logging.getLogger(__name__)


def still_wanted(job_id: int) -> None:
    """Call inside the write transaction that ends a stage: raise JobCancelled if the job was cancelled
    (or ended) while the stage worked, so a stage finishing late never moves a job out of `cancelled`;
    raise LeaseLost if the stage passed to another worker meanwhile (only the holder writes an outcome)."""
    row = ResearchJob.objects.select_for_update().filter(pk=job_id).values("status", "cancel_requested").first()
    if row is None or row["cancel_requested"] or row["status"] in TERMINAL_STATUSES:
        raise JobCancelled("The job was cancelled.")
    lease_check(ResearchJob, job_id)


class _Stages(UnitKind[ResearchJob]):
    """The job's stage lease under the protocol: the unit is the job row itself, its lease the `stage_*`
    columns (`ResearchJob.LEASE`); it is claimed while the job is in a working status."""

    model = ResearchJob
    name = "stages"
    job_field = "pk"
    claim_lock = "job"  # the job row is the unit: locked, not touched
    cancellable = True
    expected = (SoftTimeLimitExceeded,)

    def describe(self, unit: ResearchJob) -> str:
        return f"the {unit.status} stage of job {unit.pk}"

    def is_ended(self, unit: ResearchJob) -> bool:
        return unit.status not in WORKING_STATUSES

    def is_live(self, unit: ResearchJob, at: datetime) -> bool:
        return bool(unit.stage_lease_until and unit.stage_lease_until > at)

    def give_up(self, job: ResearchJob, unit: ResearchJob) -> None:
        job_set_status(job=job, status=JobStatus.FAILED,
                       error=f"The {job.status} stage was interrupted {job.stage_attempts} times "
                             f"(its worker kept dying); giving up.")

    def waiting(self, unit: ResearchJob) -> bool:
        # Fair share (research/jobs/fairness.py): a queued job starts only within its owner's running-jobs cap.
        turn = fairness.job_turn(unit)
        if turn == "start":
            job_set_status(job=unit, status=JobStatus.COORDINATING)
        return turn == "wait"

    def claim_fields(self, unit: ResearchJob, at: datetime) -> dict[str, Any]:
        return {"started_at": at} if unit.started_at is None else {}

    def write(self, job_id: int, unit: ResearchJob, outcome: Outcome) -> None:
        if outcome.status == "done":
            return  # each stage moved the job on itself (under still_wanted)
        unit.refresh_from_db()
        if unit.is_terminal:
            return
        if outcome.status == "cancelled":
            job_set_status(job=unit, status=JobStatus.CANCELLED, error="Cancelled by the user.")
        elif isinstance(outcome.error, SoftTimeLimitExceeded):
            job_set_status(job=unit, status=JobStatus.FAILED,
                           error=f"The {unit.status} stage ran over its time limit "
                                 f"({settings.CELERY_TASK_SOFT_TIME_LIMIT} s).")
        else:  # any failure is shown as a failure, with its reason
            job_set_status(job=unit, status=JobStatus.FAILED,
                           error=f"{unit.status} failed: {short(outcome.error or Exception('failed'))}")

    def release(self, claim: Claim[ResearchJob]) -> None:
        stage_release(claim.job_id, claim.token)

    def requeue_stale(self, at: datetime) -> int:
        """A stage is only sent again: its claim takes a lapsed lease over. Sent are stages whose worker
        stopped renewing the lease, and working jobs nobody claimed at all (the message was lost)."""
        working = ResearchJob.objects.filter(status__in=list(WORKING_STATUSES))
        stale = at - queue_grace()
        job_ids = [*working.filter(stage_lease_until__lt=at).values_list("pk", flat=True),
                   *working.filter(stage_lease_until__isnull=True, updated__lt=stale).values_list("pk", flat=True)]
        for job_id in job_ids:
            enqueue_advance(job_id)
        return len(job_ids)


STAGES_KIND = _Stages()


def stage_claim(job_id: int) -> tuple[ResearchJob, str] | None:
    claim = STAGES_KIND.claim(pk=job_id)
    return None if claim is None else (claim.unit, claim.token)


def stage_release(job_id: int, token: str) -> None:
    """Give the stage lease back, unless it already passed to another worker (then it is theirs)."""
    ResearchJob.objects.filter(pk=job_id, stage_lease_token=token).update(
        stage_lease_until=None, stage_attempts=0, stage_lease_token="")


def job_advance(*, job_id: int) -> None:
    """Run the job's current stage and the ones after it, until it waits (review, steps, renders) or ends."""
    unit_run(STAGES_KIND, _advance, pk=job_id)


def _advance(claim: Claim[ResearchJob]) -> None:
    job, token = claim.unit, claim.token
    for _ in range(10):
        job.refresh_from_db()
        if job.stage_lease_token != token:
            raise LeaseLost(f"the stage of job {job.pk} passed to another worker")
        if job.cancel_requested and not job.is_terminal:
            job_set_status(job=job, status=JobStatus.CANCELLED, error="Cancelled by the user.")
            break
        handler = HANDLERS.get(STAGES_BY_STATUS[JobStatus(job.status)].driver)
        if handler is None:
            break
        handler(job)


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
            opts = options_with_stage(job.options, clarify_questions=decision.questions)
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
    opts = options_with_stage(job.options, background_text=background)
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
        opts = options_without_stage(job.options, "replan_feedback", "replan_base")
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
    llm = ctx.llm if job.engine == "llm" and settings.VERIFY_MODEL_JUDGE else None
    judge = model_judge(llm, job.locale) if llm is not None else None
    # What processing steps computed (sandbox output) may be stated without a citation.
    computed = {s.id for s in plan.steps if s.step_type == "processing"}
    evidence = [r.report_md for r in results if r.step_id in computed]
    relevance = model_relevance_judge(llm, job.locale) if llm is not None else None
    checked = report_check(final.markdown, sources, locale=job.locale, judge=judge, evidence=evidence,
                           question=job.question, relevance_judge=relevance)
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


# The stage handlers by the name the declared graph gives them (states.GRAPH's `driver`): job_advance runs
# the one the graph names for the job's status, and stops where the graph names none (a person, the
# steps or the renders move the job on from there).
HANDLERS: dict[str, Callable[[ResearchJob], None]] = {
    "coordinate": _stage_coordinate,
    "investigate": _stage_investigate,
    "plan": _stage_plan,
    "report": _stage_report,
}
