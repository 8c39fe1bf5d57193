"""The job state machine: every status has its edges, and job_set_status refuses the rest."""

from __future__ import annotations

import pytest

from research.jobs import dispatch, services
from research.jobs.models import JobStatus, ResearchJob
from research.jobs.states import TRANSITIONS, InvalidTransition, assert_transition, job_set_status
from tests.support.jobs import TO_REVIEW, job_walk

S = JobStatus


def test_every_status_has_its_edges_and_every_status_is_reachable():
    assert set(TRANSITIONS) == set(S)
    seen, todo = set(), [S.QUEUED]
    while todo:
        status = todo.pop()
        if status not in seen:
            seen.add(status)
            todo.extend(TRANSITIONS[status])
    assert seen == set(S)
    for status in S:  # nothing is a dead end: a finished job can still be re-rendered or retried
        assert TRANSITIONS[status], status


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (S.QUEUED, S.COORDINATING), (S.COORDINATING, S.DONE), (S.COORDINATING, S.INVESTIGATING),
        (S.INVESTIGATING, S.PLANNING), (S.PLANNING, S.AWAITING_REVIEW), (S.PLANNING, S.RESEARCHING),
        (S.AWAITING_REVIEW, S.PLANNING), (S.AWAITING_REVIEW, S.REPORTING), (S.RESEARCHING, S.REPORTING),
        (S.REPORTING, S.RENDERING), (S.RENDERING, S.DONE), (S.RENDERING, S.CANCELLED),
        (S.DONE, S.RENDERING),  # report edit / re-render
        (S.FAILED, S.QUEUED), (S.FAILED, S.RESEARCHING), (S.CANCELLED, S.RENDERING),  # retry
    ],
)
def test_allowed_transitions(a, b):
    assert_transition(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (S.QUEUED, S.AWAITING_REVIEW), (S.COORDINATING, S.REPORTING), (S.AWAITING_REVIEW, S.FAILED),
        (S.RESEARCHING, S.PLANNING), (S.DONE, S.FAILED), (S.DONE, S.QUEUED), (S.CANCELLED, S.DONE),
        (S.RENDERING, S.RENDERING), ("nonsense", S.DONE),
    ],
)
def test_forbidden_transitions_raise(a, b):
    with pytest.raises(InvalidTransition):
        assert_transition(a, b)


@pytest.fixture
def job(alice, monkeypatch) -> ResearchJob:
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    return services.job_create(user=alice, question="How do heat pumps work?", options={})


def test_job_set_status_refuses_an_illegal_move_and_changes_nothing(job):
    with pytest.raises(InvalidTransition):
        job_set_status(job=job, status=S.REPORTING)
    job.refresh_from_db()
    assert job.status == S.QUEUED
    assert list(job.events.values_list("type", flat=True)) == ["job.status"]


def test_job_set_status_checks_the_stored_status_not_a_stale_copy(job):
    stale = ResearchJob.objects.get(pk=job.pk)
    services.job_cancel(job=job)
    # The stale copy still says "queued"; the database says "cancelled", which cannot start coordinating.
    with pytest.raises(InvalidTransition):
        job_set_status(job=stale, status=S.COORDINATING)


def test_a_legal_walk_emits_one_job_status_event_per_move(job):
    job_walk(job, *TO_REVIEW)
    statuses = [e.payload["status"] for e in job.events.filter(type="job.status").order_by("seq")]
    assert statuses == ["queued", "coordinating", "planning", "awaiting_review"]
