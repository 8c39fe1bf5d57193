"""The job state machine: which status may follow which, and the one function that changes it.

Every status change goes through job_set_status(), which reads the row's current status under the
row lock and refuses a move that TRANSITIONS does not list (InvalidTransition). The table is the job
graph of docs/architecture.md, with the edges users trigger (retry, report edit, re-render) included.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from research.jobs.events import event_emit
from research.jobs.fairness import RUNNING_STATUSES, jobs_start_waiting
from research.jobs.models import TERMINAL_STATUSES, JobStatus, ResearchJob

S = JobStatus

# Any unfinished job can be cancelled by the user; a stage that raises fails the job.
_STOP = frozenset({S.CANCELLED, S.FAILED})
# A job that ended can have its outputs rendered again (report edit, re-render, retry of a failed render).
_RERENDER = frozenset({S.RENDERING})
# Retry starts again from where the job stopped: its renders, its steps, or the beginning.
_RETRY = frozenset({S.RENDERING, S.RESEARCHING, S.QUEUED})

TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    S.QUEUED: frozenset({S.COORDINATING}) | _STOP,
    # DONE: answered directly; AWAITING_CLARIFICATION: the coordinator asked the user questions.
    S.COORDINATING: frozenset({S.DONE, S.INVESTIGATING, S.PLANNING, S.AWAITING_CLARIFICATION}) | _STOP,
    # The user answered or skipped the questions (conversation.clarification_answer).
    S.AWAITING_CLARIFICATION: frozenset({S.INVESTIGATING, S.PLANNING, S.CANCELLED}),
    S.INVESTIGATING: frozenset({S.PLANNING}) | _STOP,
    # RESEARCHING / REPORTING: the plan was auto-accepted (REPORTING: it says it has enough context).
    S.PLANNING: frozenset({S.AWAITING_REVIEW, S.RESEARCHING, S.REPORTING}) | _STOP,
    # PLANNING: re-plan with the user's feedback; CANCELLED also when the review times out.
    S.AWAITING_REVIEW: frozenset({S.PLANNING, S.RESEARCHING, S.REPORTING, S.CANCELLED}),
    S.RESEARCHING: frozenset({S.REPORTING}) | _STOP,
    S.REPORTING: frozenset({S.RENDERING, S.DONE}) | _STOP,
    S.RENDERING: frozenset({S.DONE}) | _STOP,
    # INVESTIGATING / PLANNING: "research it anyway" after a direct answer (conversation.job_research_anyway).
    S.DONE: _RERENDER | frozenset({S.INVESTIGATING, S.PLANNING}),
    S.FAILED: _RETRY | _RERENDER,
    S.CANCELLED: _RETRY,
}

START = S.QUEUED


class InvalidTransition(ValueError):
    """Code tried to move a job between two statuses that the state machine does not connect."""


def transition_allowed(current: str, target: str) -> bool:
    return JobStatus(target) in TRANSITIONS.get(JobStatus(current), frozenset())


def assert_transition(current: str, target: str) -> None:
    """Raise InvalidTransition unless `target` may follow `current`."""
    if current not in JobStatus.values or target not in JobStatus.values:
        raise InvalidTransition(f"unknown status {current!r} or {target!r}")
    if not transition_allowed(current, target):
        allowed = ", ".join(sorted(TRANSITIONS[JobStatus(current)])) or "nothing"
        raise InvalidTransition(f"a {current} job cannot become {target} (allowed: {allowed})")


def job_set_status(*, job: ResearchJob, status: str, **fields: Any) -> None:
    """Change status (checked against TRANSITIONS) and emit job.status in the same transaction.

    The current status is read from the database under the row's write lock, so a stale in-memory job
    cannot make an illegal move (for example a late stage moving a cancelled job on).
    """
    with transaction.atomic():
        current = ResearchJob.objects.select_for_update().filter(pk=job.pk).values_list("status", flat=True).first()
        if current is None:
            raise InvalidTransition(f"job {job.pk} does not exist")
        assert_transition(current, status)
        updates: dict[str, Any] = {"status": status, **fields}
        if status in TERMINAL_STATUSES:
            updates.setdefault("finished_at", timezone.now())
            updates.setdefault("stage_lease_until", None)
        ResearchJob.objects.filter(pk=job.pk).update(**updates, updated=timezone.now())
        for key, value in updates.items():
            setattr(job, key, value)
        payload: dict[str, Any] = {"status": status}
        if fields.get("error"):
            payload["error"] = fields["error"]
        event_emit(job_id=job.pk, type="job.status", payload=payload)
        if status == JobStatus.FAILED:
            event_emit(job_id=job.pk, type="job.failed", payload={"error": job.error or "failed"})
        elif status == JobStatus.DONE:
            event_emit(job_id=job.pk, type="job.done", payload={"answer": job.answer} if job.answer else {})
        if current in RUNNING_STATUSES and status not in RUNNING_STATUSES:  # fair share: a place is free
            jobs_start_waiting(job.owner_id)
