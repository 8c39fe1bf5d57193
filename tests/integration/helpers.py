"""Helpers for tests that drive real workers."""

from __future__ import annotations

import time

from research.jobs.models import JobEvent, ResearchJob


def wait_for(job: ResearchJob, statuses: set[str], timeout: float = 120.0, worker: object = None) -> ResearchJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in statuses:
            return job
        time.sleep(0.2)
    tail = worker.tail() if worker is not None and hasattr(worker, "tail") else ""
    events = list(JobEvent.objects.filter(job=job).values_list("seq", "type", "payload"))[-15:]
    raise AssertionError(f"job {job.pk} stuck in {job.status} (wanted {statuses}); error={job.error!r}\n"
                         f"events={events}\n{tail}")


def assert_event_log_complete(job: ResearchJob) -> list[JobEvent]:
    events = list(JobEvent.objects.filter(job=job).order_by("seq"))
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "gap or duplicate in the event log"
    job.refresh_from_db()
    assert job.event_seq == len(events)
    return events
