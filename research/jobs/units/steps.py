"""A job's plan steps: the scheduler (job_schedule) and one step's run (step_run).

The scheduler asks the job graph (research.agents.graph) which steps are ready and which can never run,
queues the ready ones up to the concurrency limit, and moves the job to reporting once every step ended.
A running step holds a lease token; only the holder may write its outcome (reaper.py may hand it on).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from research.agents.depth import step_runs
from research.agents.graph import blocked_steps, ready_steps
from research.agents.types import StepResult
from research.jobs import fairness
from research.jobs.dispatch import enqueue_advance, enqueue_schedule, enqueue_step
from research.jobs.events import event_emit, events_emit
from research.jobs.models import JobStatus, JobStep, ResearchJob, StepRun, StepStatus
from research.jobs.states import job_set_status
from research.jobs.units.common import accepted_plan, engine_for, now, plan_step, queue_grace, step_results
from research.jobs.units.context import JobContext
from research.jobs.units.lease import ENDED, Claim, WorkKind, unit_run
from research.jobs.units.runs import runs_fan_out, runs_synthesize, step_is_heavy
from research.report.citations import strip_citations

logger = logging.getLogger(__name__)

def step_has_runs(step: JobStep) -> bool:
    return StepRun.objects.filter(step=step).exists()


def runs_pending(step: JobStep) -> bool:
    return StepRun.objects.filter(step=step).exclude(status__in=ENDED).exists()


def _graph_steps(steps: list[JobStep]) -> list[dict[str, Any]]:
    # JobStep.depends_on already holds the effective dependencies (services.plan_start writes them).
    return [{"id": s.step_id, "step_type": s.step_type, "depends_on": list(s.depends_on)} for s in steps]


def job_schedule(*, job_id: int) -> None:
    """Queue every step whose dependencies are done; move on to the reporter when all steps ended."""
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=now())  # serialise schedulers of one job
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
        graph = _graph_steps(steps)
        # A failed step fails the steps that depend on it (and theirs).
        blocked = blocked_steps(graph, failed_ids=[s.step_id for s in steps if s.status in ENDED[1:]],
                                pending_ids=[s.step_id for s in steps if s.status == StepStatus.PENDING])
        for s in steps:
            if s.step_id in blocked:
                s.status, s.error = StepStatus.FAILED, f"skipped: it depends on step {blocked[s.step_id]}, which failed"
                JobStep.objects.filter(pk=s.pk).update(status=s.status, error=s.error)
                event_emit(job_id=job_id, type="step.failed", payload={"step": s.step_id, "error": s.error})
        limit = int(job.options.get("step_concurrency") or 0) or settings.JOB_STEP_CONCURRENCY or len(steps)
        slots = max(0, limit - len(active))
        ready = ready_steps(graph, done_ids=[s.step_id for s in steps if s.status == StepStatus.DONE],
                            running_ids=[s.step_id for s in steps if s.status != StepStatus.PENDING])
        by_id = {s.step_id: s for s in steps}
        ready_now = [by_id[step_id] for step_id in ready[:slots]]
        # Fair share: no more than the owner's free unit slots over all their jobs (research/jobs/fairness.py).
        ready_now = ready_now[:fairness.steps_admitted(job.owner_id, [
            fairness.unit_cost(step_runs(job.options, s.step_type)) for s in ready_now])]
        heavy = [s for s in ready_now if step_is_heavy(job, s)]
        for s in heavy:  # heavy mode: k parallel runs, then a synthesis (runs.py)
            runs_fan_out(job=job, step=s)
        queued = [s for s in ready_now if s not in heavy]
        JobStep.objects.filter(pk__in=[s.pk for s in queued]).update(status=StepStatus.QUEUED,
                                                                     lease_until=now() + queue_grace())
        events_emit(job_id=job_id, events=[("step.queued", {"step": s.step_id}) for s in queued])  # one write
        for s in queued:
            s.status = StepStatus.QUEUED
            enqueue_step(job_id, s.step_id)
        if all(s.status in ENDED for s in steps):
            if any(s.status == StepStatus.DONE for s in steps):
                job_set_status(job=job, status=JobStatus.REPORTING, stage_attempts=0)
                enqueue_advance(job_id)
            else:
                reasons = "; ".join(f"{s.step_id}: {s.error}" for s in steps if s.error)[:3000]
                job_set_status(job=job, status=JobStatus.FAILED, error=f"Every step failed. {reasons}")


class _Steps(WorkKind[JobStep]):
    """Plan steps under the lease protocol (lease.py); an end (or a lost lease) wakes the scheduler."""

    model = JobStep
    name = "steps"
    kind = "step"

    def describe(self, unit: JobStep) -> str:
        return f"step {unit.step_id} of job {unit.job_id}"

    def payload(self, unit: JobStep) -> dict[str, Any]:
        return {"step": unit.step_id}

    def waiting(self, unit: JobStep) -> bool:
        # A heavy step waiting on its runs: their last one queues it.
        return unit.status == StepStatus.RUNNING and unit.lease_until is None and runs_pending(unit)

    def started(self, job: ResearchJob, unit: JobStep) -> None:
        # A heavy step comes back here once its runs ended, to merge them.
        event_emit(job_id=job.pk, type="step.synthesizing" if step_has_runs(unit) else "step.started",
                   payload={"step": unit.step_id, "title": unit.title, "type": unit.step_type,
                            "attempt": unit.attempts})

    def completed(self, unit: JobStep, fields: dict[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "figures": fields.get("result", {}).get("figures", []), "chars": len(fields.get("result_md", "")),
            "finding": " ".join(strip_citations(str(fields.get("result_md", ""))).split())[:280]}
        notes = fields.get("result", {}).get("notes", {})
        if isinstance(notes, dict) and notes.get("synthesis"):  # heavy: how many runs it merged
            extra.update({"synthesized": True, "runs": len(notes.get("runs_done", [])),
                          "lost": len(notes.get("runs_lost", []))})
        return extra

    def after_end(self, job_id: int, unit: JobStep, *, written: bool) -> None:
        enqueue_schedule(job_id)
        fairness.schedule_others(unit.job.owner_id, except_job=job_id)  # fair share: a unit slot is free

    def send(self, unit: JobStep) -> None:
        enqueue_step(unit.job_id, unit.step_id)


STEPS_KIND = _Steps()


def step_claim(job_id: int, step_id: str) -> tuple[ResearchJob, JobStep, str] | None:
    claim = STEPS_KIND.claim(job_id=job_id, step_id=step_id)
    return None if claim is None else (claim.job, claim.unit, claim.token)


def step_finish(job_id: int, step: JobStep, token: str, **fields: Any) -> bool:
    """Write the outcome only if we still hold the lease (the reaper may have handed the step on)."""
    return STEPS_KIND.finish_fields(job_id, step, token, fields)


def steps_requeue_stale(at: datetime) -> int:
    """For the reaper: re-queue steps whose worker stopped renewing the lease or whose message was lost."""
    return STEPS_KIND.requeue_stale(at)


def step_run(*, job_id: int, step_id: str) -> None:
    unit_run(STEPS_KIND, _step_work, job_id=job_id, step_id=step_id)


def _step_work(claim: Claim[JobStep]) -> StepResult:
    job, step = claim.job, claim.unit
    ctx = JobContext(job, step_id=step.step_id)
    plan = accepted_plan(job)
    engine = engine_for(job)
    ctx.check_cancelled()
    if step_has_runs(step):
        return runs_synthesize(ctx, engine, step, plan)
    prior = step_results(job, list(step.depends_on))
    if step.step_type == "processing":
        return engine.process(ctx, plan_step(step), plan, prior)
    return engine.research(ctx, plan_step(step), plan, prior)
