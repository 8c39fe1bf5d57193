"""The job state machine: which status may follow which, and the one function that changes it.

GRAPH declares, for every status, who moves the job on (its stage handler, the steps, the renders, or a
person) and which statuses may follow, with why. Every status change goes through job_set_status(), which
reads the row's current status under the row lock and refuses a move the graph does not list
(InvalidTransition). docs/architecture.md's diagram is generated from GRAPH (graph_mermaid) and a test
keeps them equal; `make test` checks that every declared edge is taken by some test.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from research.jobs.events import event_emit
from research.jobs.fairness import RUNNING_STATUSES, jobs_start_waiting
from research.jobs.models import TERMINAL_STATUSES, JobStatus, ResearchJob

S = JobStatus
transitions_logger = logging.getLogger("research.jobs.transitions")


@dataclass(frozen=True)
class Stage:
    """One status of the job graph: what moves a job on from it, and where it may go next (and why).

    `driver` names who works while a job is in this status: a stage handler of the `job_advance` unit
    (research/jobs/units/stages.py, keyed by this name), "steps" (the research team's step units),
    "renders" (the render units), "user" (the job waits for a person) or "" (the job has ended; only a
    user's action moves it again).
    """

    status: JobStatus
    driver: str
    next: dict[JobStatus, str] = field(default_factory=dict)


_STOPS = {S.CANCELLED: "cancelled by the user", S.FAILED: "its work failed"}
# A job that ended can have its outputs rendered again; retry starts again from where the job stopped.
_RERENDER = {S.RENDERING: "report edit, re-render, a follow-up folded in"}
_RETRY = {S.RENDERING: "retry its renders", S.RESEARCHING: "retry its steps", S.QUEUED: "retry from the start"}

# The job graph. The code that moves a job reads it: job_set_status refuses any other move, and
# job_advance runs the stage handler named here. docs/architecture.md's diagram is generated from it.
GRAPH: tuple[Stage, ...] = (
    Stage(S.QUEUED, "coordinate", {S.COORDINATING: "a worker takes the job", **_STOPS}),
    Stage(S.COORDINATING, "coordinate", {
        S.DONE: "greeting or refusal answered directly",
        S.AWAITING_CLARIFICATION: "the coordinator asks the user questions",
        S.INVESTIGATING: "background search first", S.PLANNING: "straight to the planner", **_STOPS}),
    Stage(S.AWAITING_CLARIFICATION, "user", {
        S.INVESTIGATING: "answered or skipped", S.PLANNING: "answered or skipped",
        S.CANCELLED: "cancelled by the user"}),
    Stage(S.INVESTIGATING, "investigate", {S.PLANNING: "search results go to the planner", **_STOPS}),
    Stage(S.PLANNING, "plan", {
        S.AWAITING_REVIEW: "the user reviews the plan", S.RESEARCHING: "auto-accepted",
        S.REPORTING: "auto-accepted, the plan has enough context", **_STOPS}),
    Stage(S.AWAITING_REVIEW, "user", {
        S.PLANNING: "re-plan with the user's feedback", S.RESEARCHING: "accepted",
        S.REPORTING: "accepted, the plan has enough context",
        S.CANCELLED: "cancelled by the user, or the review timed out"}),
    Stage(S.RESEARCHING, "steps", {S.REPORTING: "every step ended", **_STOPS}),
    Stage(S.REPORTING, "report", {
        S.RENDERING: "outputs beyond Markdown wanted", S.DONE: "Markdown only", **_STOPS}),
    Stage(S.RENDERING, "renders", {S.DONE: "every output ended", **_STOPS}),
    Stage(S.DONE, "", {**_RERENDER, S.INVESTIGATING: "research it anyway after a direct answer",
                       S.PLANNING: "research it anyway after a direct answer"}),
    Stage(S.FAILED, "", {**_RETRY, S.RENDERING: "retry its renders, a report edit or a re-render"}),
    Stage(S.CANCELLED, "", _RETRY),
)

STAGES_BY_STATUS: dict[JobStatus, Stage] = {stage.status: stage for stage in GRAPH}
TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {stage.status: frozenset(stage.next) for stage in GRAPH}

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
        # One line per move (settings.JOB_TRANSITIONS_LOG can send these to a file: an audit trail, and
        # how `make test` checks that every declared edge is taken by some test).
        transitions_logger.info("transition %s %s %s", job.pk, current, status)
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


_DRIVERS = {"user": "a person (nothing runs)", "steps": "the step units", "renders": "the render units",
            "": "nothing: it has ended"}


def graph_table() -> str:
    """The job graph as the Markdown table docs/architecture.md shows."""
    rows = ["| Status | Moved on by | May become |", "|---|---|---|"]
    for stage in GRAPH:
        driver = _DRIVERS.get(stage.driver, f"the `{stage.driver}` stage of `job_advance`")
        targets = "; ".join(f"`{target.value}` ({why})" for target, why in stage.next.items())
        rows.append(f"| `{stage.status.value}` | {driver} | {targets} |")
    return "\n".join(rows)


def graph_mermaid() -> str:
    """The job graph as a Mermaid state diagram: the block docs/architecture.md shows."""
    lines = ["stateDiagram-v2", f"    [*] --> {START.value}"]
    for stage in GRAPH:
        for target, why in stage.next.items():
            lines.append(f"    {stage.status.value} --> {target.value}: {why}")
    lines.extend(f"    {status.value} --> [*]" for status in sorted(TERMINAL_STATUSES))
    return "\n".join(lines)
