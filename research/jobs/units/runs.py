"""Heavy mode's parallel runs of a research step (docs/agents.md, "Depth: standard and heavy").

A heavy job's research and analysis steps run k times in parallel; each run is a StepRun row and its own
Celery unit, claimed, leased and reaped like a step, so a killed worker loses one run, not the step:

1. The scheduler (steps.job_schedule) calls `runs_fan_out` for a ready heavy step: k runs are queued,
   each with its own variant (seed, source-type emphasis, opening query: research.agents.depth), and
   the step is `running` with no lease while it waits for them.
2. `run_research` (task `run_research`) claims one run, holds its lease and calls the engine's
   `research(..., variant=...)`; `run_finish` writes its outcome if it still holds the lease.
3. When the last run of a step ended, the step is queued again (same transaction as that run's end);
   `steps.step_run` claims it as usual and calls `runs_synthesize`: the engine merges the successful
   runs into the step's finding. A run lost after its retries is reported; all runs failing fails the step.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from research.agents.depth import ANCHORED_ENGINES, run_variants, step_runs, variant_from_dict
from research.agents.types import Engine, Plan, PlanStep, StepResult
from research.jobs import fairness
from research.jobs.dispatch import enqueue_run, enqueue_step
from research.jobs.events import event_emit
from research.jobs.models import JobStep, ResearchJob, StepRun, StepStatus
from research.jobs.units.common import (
    accepted_plan,
    engine_for,
    engine_name,
    now,
    plan_step,
    queue_grace,
    step_results,
)
from research.jobs.units.context import JobContext
from research.jobs.units.lease import ENDED, Claim, WorkKind, unit_run
from research.report.citations import strip_citations


class RunsFailed(Exception):
    """Every run of a heavy step failed: the step fails with their reasons."""


def step_is_heavy(job: ResearchJob, step: JobStep) -> bool:
    return step_runs(job.options, step.step_type) > 0


def runs_fan_out(*, job: ResearchJob, step: JobStep) -> None:
    """Queue the k runs of a ready heavy step (inside the scheduler's transaction).

    Runs already done (a retried job) are kept; the others are queued afresh. The step is `running`
    without a lease while its runs work (the reaper leaves it alone; the runs have their own leases).
    """
    variants = run_variants(plan_step(step), job_id=job.pk, k=step_runs(job.options, step.step_type),
                            locale=job.locale, anchor=engine_name(job) in ANCHORED_ENGINES)
    existing = {r.index: r for r in StepRun.objects.filter(step=step)}
    StepRun.objects.filter(step=step, index__gte=len(variants)).delete()  # fewer runs asked for on a retry
    at = now()
    JobStep.objects.filter(pk=step.pk).update(status=StepStatus.RUNNING, lease_until=None, lease_token="",
                                              started_at=at, error="")
    step.status = StepStatus.RUNNING
    event_emit(job_id=job.pk, type="step.started",
               payload={"step": step.step_id, "title": step.title, "type": step.step_type, "runs": len(variants)})
    queued = 0
    for variant in variants:
        row = existing.get(variant.index)
        if row is not None and row.status == StepStatus.DONE:
            continue
        fields: dict[str, Any] = {"status": StepStatus.QUEUED, "attempts": 0, "error": "", "lease_token": "",
                                  "lease_until": at + queue_grace(), "variant": asdict(variant),
                                  "result_md": "", "result": {}, "started_at": None, "finished_at": None}
        if row is None:
            StepRun.objects.create(step=step, job=job, index=variant.index, **fields)
        else:
            StepRun.objects.filter(pk=row.pk).update(**fields)
        event_emit(job_id=job.pk, type="run.queued",
                   payload={"step": step.step_id, "run": variant.index, "runs": len(variants),
                            "emphasis": variant.emphasis})
        enqueue_run(job.pk, step.step_id, variant.index)
        queued += 1
    if not queued:  # every run was done already: straight to the synthesis
        _synthesis_queue(job.pk, step)


def _synthesis_queue(job_id: int, step: JobStep) -> None:
    JobStep.objects.filter(pk=step.pk).update(status=StepStatus.QUEUED, lease_until=now() + queue_grace())
    event_emit(job_id=job_id, type="step.queued", payload={"step": step.step_id, "synthesis": True})
    enqueue_step(job_id, step.step_id)


def _after_run(job_id: int, step_pk: int) -> None:
    """Inside the transaction that ended a run, with the step row locked: queue the synthesis when it was
    the step's last run. The lock makes the last two runs ending together queue it exactly once."""
    if StepRun.objects.filter(step_id=step_pk).exclude(status__in=ENDED).exists():
        return
    step = JobStep.objects.get(pk=step_pk)
    if step.status == StepStatus.RUNNING and step.lease_until is None:  # still waiting on its runs
        _synthesis_queue(job_id, step)


class _Runs(WorkKind[StepRun]):
    """Heavy mode's runs under the lease protocol (lease.py); the last run's end queues the synthesis."""

    model = StepRun
    name = "runs"
    kind = "run"

    def describe(self, unit: StepRun) -> str:
        return f"run {unit.index} of step {unit.step.step_id} of job {unit.job_id}"

    def queryset(self) -> QuerySet[StepRun]:
        return StepRun.objects.select_related("step")

    def payload(self, unit: StepRun) -> dict[str, Any]:
        return {"step": unit.step.step_id, "run": unit.index}

    def lock_related(self, unit: StepRun) -> None:
        # The step row (after the job row): the last two runs ending together queue the synthesis once.
        JobStep.objects.select_for_update().filter(pk=unit.step_id).values_list("pk").first()

    def started(self, job: ResearchJob, unit: StepRun) -> None:
        event_emit(job_id=job.pk, type="run.started",
                   payload={**self.payload(unit), "attempt": unit.attempts,
                            "emphasis": str(unit.variant.get("emphasis", ""))})

    def completed(self, unit: StepRun, fields: dict[str, Any]) -> dict[str, Any]:
        notes = fields.get("result", {}).get("notes", {})
        sources = notes.get("sources") if isinstance(notes, dict) else None
        searches = notes.get("searches") if isinstance(notes, dict) else None
        finding = " ".join(strip_citations(str(fields.get("result_md", ""))).split())
        return {"chars": len(fields.get("result_md", "")), "finding": finding[:200],
                "sources": len(sources) if isinstance(sources, list) else None,
                "searches": searches if isinstance(searches, int) else None}

    def after_end(self, job_id: int, unit: StepRun, *, written: bool) -> None:
        if written:
            _after_run(job_id, unit.step_id)
        fairness.schedule_others(unit.job.owner_id, except_job=0)  # fair share: a unit slot is free

    def send(self, unit: StepRun) -> None:
        enqueue_run(unit.job_id, unit.step.step_id, unit.index)


RUNS_KIND = _Runs()


def run_claim(job_id: int, step_id: str, index: int) -> tuple[ResearchJob, JobStep, StepRun, str] | None:
    """Claim a run like steps.step_claim claims a step: a no-op for an ended run or one under a live lease."""
    claim = RUNS_KIND.claim(job_id=job_id, step__step_id=step_id, index=index)
    return None if claim is None else (claim.job, claim.unit.step, claim.unit, claim.token)


def run_finish(job_id: int, run: StepRun, token: str, **fields: Any) -> bool:
    """Write a run's outcome only if it still holds the lease; queue the synthesis after the last run."""
    return RUNS_KIND.finish_fields(job_id, run, token, fields)


def run_research(*, job_id: int, step_id: str, index: int) -> None:
    """One run of a heavy step: the engine's research with this run's variant, under the run's lease."""
    unit_run(RUNS_KIND, _run_work, job_id=job_id, step__step_id=step_id, index=index)


def _run_work(claim: Claim[StepRun]) -> StepResult:
    job, run = claim.job, claim.unit
    step = run.step
    ctx = JobContext(job, step_id=step.step_id, run=run.index)
    plan = accepted_plan(job)
    prior = step_results(job, list(step.depends_on))
    ctx.check_cancelled()
    return engine_for(job).research(ctx, plan_step(step), plan, prior, variant=variant_from_dict(run.variant))


def runs_synthesize(ctx: JobContext, engine: Engine, step: JobStep, plan: Plan) -> StepResult:
    """The step's finding from its successful runs (called by steps.step_run once every run ended)."""
    rows = list(StepRun.objects.filter(step=step).order_by("index"))
    done = [r for r in rows if r.status == StepStatus.DONE and r.result_md.strip()]
    lost = [{"run": r.index, "status": r.status, "error": r.error} for r in rows if r not in done]
    if not done:
        reasons = "; ".join(f"run {r.index + 1}: {' '.join((r.error or r.status).split())}" for r in rows)
        raise RunsFailed(f"every run failed ({reasons})"[:1500])
    results = [StepResult(step_id=step.step_id, title=step.title, report_md=r.result_md,
                          figures=list(r.result.get("figures", [])),
                          notes={**dict(r.result.get("notes", {})), "run": r.index}) for r in done]
    event_emit(job_id=step.job_id, type="step.activity",
               payload={"step": step.step_id, "kind": "synthesis", "runs": len(done), "lost": len(lost)})
    ps: PlanStep = plan_step(step)
    result = engine.synthesize(ctx, ps, plan, results)
    result.notes = {**result.notes, "runs_done": [r.index for r in done], "runs_lost": lost}
    return result


def runs_requeue_stale(at: datetime) -> int:
    """For the reaper: re-queue runs whose worker stopped renewing the lease or whose message was lost."""
    return RUNS_KIND.requeue_stale(at)
