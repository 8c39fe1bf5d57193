"""Celery tasks: thin wrappers that load by id and call a unit of work. Nothing imports this module:
research/jobs/dispatch.py sends these by name, and the worker finds them by autodiscovery."""

from __future__ import annotations

from celery import shared_task

from research.jobs.units import edit_check, followups, reaper, renders, runs, stages, steps


@shared_task(name="research.jobs.tasks.job_advance")
def job_advance(job_id: int) -> None:
    stages.job_advance(job_id=job_id)


@shared_task(name="research.jobs.tasks.job_schedule")
def job_schedule(job_id: int) -> None:
    steps.job_schedule(job_id=job_id)


@shared_task(name="research.jobs.tasks.step_run")
def step_run(job_id: int, step_id: str) -> None:
    steps.step_run(job_id=job_id, step_id=step_id)


@shared_task(name="research.jobs.tasks.run_research")
def run_research(job_id: int, step_id: str, index: int) -> None:
    runs.run_research(job_id=job_id, step_id=step_id, index=index)


@shared_task(name="research.jobs.tasks.render_output")
def render_output(job_id: int, kind: str) -> None:
    renders.output_render(job_id=job_id, kind=kind)


@shared_task(name="research.jobs.tasks.reap_stale_work", ignore_result=True)
def reap_stale_work() -> dict[str, int]:
    return reaper.reap_stale_work()


@shared_task(name="research.jobs.tasks.followup_answer")
def followup_answer(followup_id: int) -> None:
    followups.followup_run(followup_id=followup_id)


@shared_task(name="research.jobs.tasks.report_edit_check")
def report_edit_check(check_id: int) -> None:
    edit_check.report_edit_check_run(check_id=check_id)
