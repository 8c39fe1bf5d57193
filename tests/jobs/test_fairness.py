"""Fair share between accounts (issue 34, case 2): caps on running jobs and units, the rest in order.

In-process, against the database, with the broker replaced by a list of the units that would be sent
(as tests/jobs/test_units.py). bench/run.py --only fairness measures the same with real workers.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from research.agents.types import Plan, PlanStep
from research.jobs import dispatch, fairness, services
from research.jobs.models import JobStatus, JobStep, ResearchJob, StepStatus
from research.jobs.states import job_set_status
from research.jobs.units.stages import stage_claim
from research.jobs.units.steps import job_schedule, step_claim
from tests.support.jobs import TO_REVIEW, job_walk

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def sent(monkeypatch, settings) -> list[tuple]:
    settings.FAIR_USER_RUNNING_JOBS = 3
    settings.FAIR_USER_RUNNING_UNITS = 2
    units: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: units.append(a))
    return units


def _running(user, n: int) -> list[ResearchJob]:
    jobs = [services.job_create(user=user, question=f"Running {i}?", options={}) for i in range(n)]
    ResearchJob.objects.filter(pk__in=[j.pk for j in jobs]).update(status=JobStatus.RESEARCHING)
    return jobs


def test_a_fourth_job_waits_in_order_and_says_why(sent, alice, bob, alice_client):
    running = _running(alice, 3)
    waiting = [services.job_create(user=alice, question=f"Waiting {i}?", options={}) for i in range(2)]
    for job in waiting:
        assert stage_claim(job.pk) is None  # not started: three are running
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED
    text = "3 of your jobs are running; this one starts when one ends"
    assert waiting[0].events.filter(type="job.waiting", payload__message__startswith=text[:20]).exists()
    assert text in alice_client.get(reverse("job_detail", args=[waiting[0].pk])).content.decode()
    # Another account is not held up by alice's queue.
    theirs = services.job_create(user=bob, question="Bob's one-step question?", options={})
    assert stage_claim(theirs.pk) is not None
    # One of alice's jobs ends: the oldest waiting one is sent, and only it may start.
    sent.clear()
    job_set_status(job=running[0], status=JobStatus.CANCELLED, error="Cancelled by the user.")
    assert ("advance", waiting[0].pk) in sent and ("advance", waiting[1].pk) not in sent
    assert stage_claim(waiting[1].pk) is None  # the newer one does not jump the queue
    assert stage_claim(waiting[0].pk) is not None
    waiting[0].refresh_from_db()
    assert waiting[0].status == JobStatus.COORDINATING


def test_a_job_waiting_for_review_holds_no_place(sent, alice):
    reviewing = services.job_create(user=alice, question="Review me?", options={})
    job_walk(reviewing, *TO_REVIEW)
    _running(alice, 2)
    assert stage_claim(services.job_create(user=alice, question="Third?", options={}).pk) is not None


def _researching(user, n_steps: int, **options) -> ResearchJob:
    job = services.job_create(user=user, question="How do heat pumps work?", options=options)
    job_walk(job, *TO_REVIEW)
    steps = [PlanStep(id=f"s{i}", title=f"S{i}") for i in range(n_steps)]
    version = services.plan_version_create(job=job, plan=Plan(title="P", steps=steps), author="planner")
    services.plan_start(job=job, version=version)
    job.refresh_from_db()
    return job


def _queued(job: ResearchJob) -> int:
    return JobStep.objects.filter(job=job, status=StepStatus.QUEUED).count()


def test_units_are_capped_per_account_across_its_jobs(sent, alice, bob, settings):
    settings.FAIR_USER_RUNNING_JOBS = 0
    first, second = _researching(alice, 3), _researching(alice, 3)
    job_schedule(job_id=first.pk)
    job_schedule(job_id=second.pk)
    assert (_queued(first), _queued(second)) == (2, 0)  # alice's 3rd unit waits ...
    assert "2 steps running or queued, the most one account may" in fairness.job_wait_text(second)
    theirs = _researching(bob, 1)
    job_schedule(job_id=theirs.pk)
    assert _queued(theirs) == 1  # ... and bob's first does not wait behind it
    # One of alice's steps ends: her other job is scheduled again and gets the free slot.
    claimed = step_claim(first.pk, "s0")
    assert claimed is not None
    sent.clear()
    from research.jobs.units.steps import step_finish

    step_finish(first.pk, claimed[1], claimed[2], status=StepStatus.DONE)
    assert ("schedule", second.pk) in sent
    job_schedule(job_id=second.pk)
    assert _queued(second) == 1 and fairness.units_in_use(alice.pk) == 2


def test_a_heavy_step_counts_its_runs(sent, alice, settings):
    settings.FAIR_USER_RUNNING_JOBS = 0
    settings.FAIR_USER_RUNNING_UNITS = 4
    plain = _researching(alice, 1)
    job_schedule(job_id=plain.pk)
    heavy = _researching(alice, 1, depth="heavy", runs=3)
    job_schedule(job_id=heavy.pk)
    assert fairness.units_in_use(alice.pk) == 4  # 1 step + 3 runs
    another = _researching(alice, 1)
    job_schedule(job_id=another.pk)
    assert _queued(another) == 0


def test_the_job_quota_counts_a_heavy_job_as_its_runs(settings, alice, monkeypatch):
    """Issue 34 case 2: a heavy job counted the same as a one-step job against the 30 jobs per hour."""
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    settings.JOB_CREATE_RATE = "10/h"
    services.job_create(user=alice, question="Heavy one?", options={"depth": "heavy", "runs": 5})
    services.job_create(user=alice, question="Heavy two?", options={"depth": "heavy", "runs": 4})
    with pytest.raises(services.RateLimited):
        services.job_create(user=alice, question="Heavy three?", options={"depth": "heavy", "runs": 2})
    services.job_create(user=alice, question="A plain one fits?", options={})
