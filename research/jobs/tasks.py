"""Celery tasks: thin wrappers that load by id and call a service."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from kombu.exceptions import OperationalError

from research.jobs import pipeline

logger = logging.getLogger(__name__)


class UnitTask(Task):
    """A unit of job work. Its state lives in the database, so a message that cannot be sent is not fatal.

    Units are queued from transaction.on_commit; if the broker is down at that moment, raising would turn
    an already committed change (a finished step, an accepted plan) into a reported failure. Instead the
    send is logged and dropped: the reaper re-sends every unit that nobody picked up within
    STEP_QUEUE_GRACE_S (see pipeline.reap_stale_work).
    """

    abstract = True

    def apply_async(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().apply_async(*args, **kwargs)
        except (OperationalError, OSError) as exc:
            logger.warning("could not queue %s%s (%s); the reaper will re-send it", self.name,
                           kwargs.get("args") or (args[0] if args else ()), exc)
            return None


@shared_task(base=UnitTask, name="research.jobs.tasks.job_advance")
def job_advance(job_id: int) -> None:
    pipeline.job_advance(job_id=job_id)


@shared_task(base=UnitTask, name="research.jobs.tasks.job_schedule")
def job_schedule(job_id: int) -> None:
    pipeline.job_schedule(job_id=job_id)


@shared_task(base=UnitTask, name="research.jobs.tasks.step_run")
def step_run(job_id: int, step_id: str) -> None:
    pipeline.step_run(job_id=job_id, step_id=step_id)


@shared_task(base=UnitTask, name="research.jobs.tasks.render_output")
def render_output(job_id: int, kind: str) -> None:
    pipeline.output_render(job_id=job_id, kind=kind)


@shared_task(name="research.jobs.tasks.reap_stale_work", ignore_result=True)
def reap_stale_work() -> dict[str, int]:
    return pipeline.reap_stale_work()


@shared_task(base=UnitTask, name="research.jobs.tasks.followup_answer")
def followup_answer(followup_id: int) -> None:
    from research.jobs.followups import followup_run

    followup_run(followup_id=followup_id)
