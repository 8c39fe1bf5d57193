"""The eval's wait (`bench.harness.Stack.wait_jobs`) gives a long batch time while its jobs move, and
fails once they stop: a final reading's 184 jobs move in step and none finishes until near the end, so
waiting only on finished jobs timed out a healthy run."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import close_old_connections

from bench.harness import Stack
from research.jobs.models import JobEvent, JobStatus, ResearchJob

pytestmark = pytest.mark.django_db(transaction=True)


def _stack() -> Stack:
    stack = Stack.__new__(Stack)  # no processes: wait_jobs reads the database and the workers' logs only
    stack.workers = []
    return stack


def test_the_wait_fails_when_the_jobs_stop_moving(alice):
    job = ResearchJob.objects.create(owner=alice, question="q", status=JobStatus.RESEARCHING)
    with pytest.raises(TimeoutError):
        _stack().wait_jobs([job.pk], timeout=0.2, stall=1.0)


def test_the_wait_goes_on_while_the_jobs_make_progress_though_none_finishes(alice):
    job = ResearchJob.objects.create(owner=alice, question="q", status=JobStatus.RESEARCHING)

    def work() -> None:
        try:
            for seq in range(30):  # an event every 0.2 s for 6 s: three times the timeout, twice a stall
                JobEvent.objects.create(job=job, seq=seq + 1, type="step.activity", payload={})
                time.sleep(0.2)
            ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
        finally:
            close_old_connections()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        _stack().wait_jobs([job.pk], timeout=2.0, stall=3.0)  # at most 8 s in all
    finally:
        worker.join()
    assert ResearchJob.objects.get(pk=job.pk).status == JobStatus.DONE


def test_the_wait_never_runs_past_its_ceiling_however_busy_the_jobs(alice):
    job = ResearchJob.objects.create(owner=alice, question="q", status=JobStatus.RESEARCHING)
    stop = threading.Event()

    def busy() -> None:
        try:
            seq = 0
            while not stop.is_set():  # a job that loops writing events and never finishes
                seq += 1
                JobEvent.objects.create(job=job, seq=seq, type="step.activity", payload={})
                time.sleep(0.1)
        finally:
            close_old_connections()

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        with pytest.raises(TimeoutError):
            _stack().wait_jobs([job.pk], timeout=0.5, stall=10.0)  # the ceiling: 2 s
    finally:
        stop.set()
        worker.join()
