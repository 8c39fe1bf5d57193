"""Helpers shared by the worker-side units of work (lease.py, stages.py, steps.py, runs.py, renders.py)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from research.agents.engines import ENGINE_NAMES, get_engine
from research.agents.types import Engine, Plan, PlanStep, StepResult
from research.jobs.models import JobStep, ResearchJob, StepStatus


def now() -> datetime:
    return timezone.now()


def queue_grace() -> timedelta:
    """A queued unit not picked up within this time is re-sent (its message may have been lost)."""
    return timedelta(seconds=settings.STEP_QUEUE_GRACE_S)


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
