"""Helpers shared by the worker-side units of work (stages.py, steps.py, renders.py, reaper.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from research.agents.engines import ENGINE_NAMES, get_engine
from research.agents.types import BudgetExceeded, Engine, JobCancelled, Plan, PlanStep, StepResult
from research.jobs.models import TERMINAL_STATUSES, JobStep, ResearchJob, StepStatus
from research.jobs.units.leases import LeaseLost, lease_check

logger = logging.getLogger(__name__)


def now() -> datetime:
    return timezone.now()


def queue_grace() -> timedelta:
    """A queued unit not picked up within this time is re-sent (its message may have been lost)."""
    return timedelta(seconds=settings.STEP_QUEUE_GRACE_S)


def still_wanted(job_id: int) -> None:
    """Call inside the write transaction that ends a stage: raise JobCancelled if the job was cancelled
    (or ended) while the stage worked, so a stage finishing late never moves a job out of `cancelled`;
    raise LeaseLost if the stage passed to another worker meanwhile (only the holder writes an outcome)."""
    row = ResearchJob.objects.select_for_update().filter(pk=job_id).values("status", "cancel_requested").first()
    if row is None or row["cancel_requested"] or row["status"] in TERMINAL_STATUSES:
        raise JobCancelled("The job was cancelled.")
    lease_check(ResearchJob, job_id)


def short(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    return text if len(text) < 1500 else text[:1500] + "…"


def engine_name(job: ResearchJob) -> str:
    """The engine the job runs with (an unknown name runs offline)."""
    return job.engine if job.engine in ENGINE_NAMES else "offline"


def engine_for(job: ResearchJob) -> Engine:
    return get_engine(engine_name(job))


def accepted_plan(job: ResearchJob) -> Plan:
    version = job.plan_versions.filter(accepted=True).order_by("-number").first()
    if version is None:
        raise ValueError("no accepted plan")
    return Plan.model_validate(version.plan)


def step_results(job: ResearchJob, ids: list[str] | None = None) -> list[StepResult]:
    steps = job.steps.filter(status=StepStatus.DONE).order_by("position")
    if ids is not None:
        steps = steps.filter(step_id__in=ids)
    return [StepResult(step_id=s.step_id, title=s.title, report_md=s.result_md,
                       figures=list(s.result.get("figures", [])), notes=dict(s.result.get("notes", {})))
            for s in steps]


def plan_step(step: JobStep) -> PlanStep:
    """The plan step a JobStep row stands for."""
    return PlanStep(id=step.step_id, title=step.title, description=step.description,
                    step_type=step.step_type,  # type: ignore[arg-type]
                    need_search=step.need_search, depends_on=list(step.depends_on))


def jsonable(value: Any) -> Any:
    """Step notes as the JSON field will store them; anything not JSON becomes its str()."""
    return json.loads(json.dumps(value, default=str))


def unit_outcome(work: Callable[[], StepResult], finish: Callable[..., bool], *, label: str) -> None:
    """Run a step's or a run's work and write its outcome through `finish` (which checks the lease token):
    done with the result, cancelled, or failed with a readable reason. Shared by steps.py and runs.py."""
    try:
        result = work()
        if not result.report_md.strip():
            raise ValueError("the step produced an empty report")
        finish(status=StepStatus.DONE, result_md=result.report_md,
               result={"figures": result.figures, "notes": jsonable(result.notes)})
    except LeaseLost:  # another worker holds the unit now: its outcome is the one that counts
        logger.info("%s: the lease passed to another worker; stopping without an outcome", label)
    except JobCancelled:
        finish(status=StepStatus.CANCELLED, error="cancelled")
    except SoftTimeLimitExceeded:
        finish(status=StepStatus.FAILED, error=f"ran over its time limit ({settings.CELERY_TASK_SOFT_TIME_LIMIT} s)")
    except BudgetExceeded as exc:
        finish(status=StepStatus.FAILED, error=short(exc))
    except Exception as exc:
        logger.exception("%s failed", label)
        finish(status=StepStatus.FAILED, error=short(exc))
