"""Move a job through the state machine in tests, one legal transition at a time."""

from __future__ import annotations

from research.jobs.models import JobStatus, ResearchJob
from research.jobs.states import job_set_status

TO_REVIEW = (JobStatus.COORDINATING, JobStatus.PLANNING, JobStatus.AWAITING_REVIEW)


def job_walk(job: ResearchJob, *statuses: str) -> None:
    for status in statuses:
        job_set_status(job=job, status=status)
