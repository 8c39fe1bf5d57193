"""Celery tasks: thin wrappers that load by id and call a service."""

from __future__ import annotations

from celery import shared_task

from research.jobs import pipeline


@shared_task(name="research.jobs.tasks.job_advance")
def job_advance(job_id: int) -> None:
    pipeline.job_advance(job_id=job_id)


@shared_task(name="research.jobs.tasks.job_schedule")
def job_schedule(job_id: int) -> None:
    pipeline.job_schedule(job_id=job_id)


@shared_task(name="research.jobs.tasks.step_run")
def step_run(job_id: int, step_id: str) -> None:
    pipeline.step_run(job_id=job_id, step_id=step_id)


@shared_task(name="research.jobs.tasks.render_output")
def render_output(job_id: int, kind: str) -> None:
    pipeline.output_render(job_id=job_id, kind=kind)


@shared_task(name="research.jobs.tasks.reap_stale_work", ignore_result=True)
def reap_stale_work() -> dict[str, int]:
    return pipeline.reap_stale_work()
