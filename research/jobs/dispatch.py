"""The only code that talks to the broker: one typed enqueue_* per unit of work, sent on commit.

Units are sent by task name (research/jobs/tasks.py registers them), so nothing imports the tasks
module. A unit's state lives in the database, so a message that cannot be sent is not fatal: if the
broker is down when the transaction commits, raising would turn an already committed change (a finished
step, an accepted plan) into a reported failure. The send is logged and dropped instead; the reaper
(research/jobs/units/reaper.py) re-sends every unit nobody picked up within STEP_QUEUE_GRACE_S.
"""

from __future__ import annotations

import logging
from typing import Literal

from django.db import transaction
from kombu.exceptions import OperationalError

logger = logging.getLogger(__name__)

Unit = Literal["advance", "schedule", "step", "run", "render", "followup", "kb_index", "report_edit_check"]

TASK_NAMES: dict[Unit, str] = {
    "advance": "research.jobs.tasks.job_advance",
    "schedule": "research.jobs.tasks.job_schedule",
    "step": "research.jobs.tasks.step_run",
    "run": "research.jobs.tasks.run_research",
    "render": "research.jobs.tasks.render_output",
    "followup": "research.jobs.tasks.followup_answer",
    "kb_index": "research.knowledge.tasks.document_index",
    "report_edit_check": "research.jobs.tasks.report_edit_check",
}


def send(unit: Unit, *args: int | str) -> None:
    """Send one unit to the broker now."""
    from research.celery import app

    name = TASK_NAMES[unit]
    try:
        app.send_task(name, args=list(args))
    except (OperationalError, OSError) as exc:
        logger.warning("could not queue %s%s (%s); the reaper will re-send it", name, tuple(args), exc)


def send_on_commit(unit: Unit, *args: int | str) -> None:
    """Send the unit once the caller's transaction commits (at once outside a transaction).

    In-process tests replace this function to record units instead of sending them.
    """
    transaction.on_commit(lambda: send(unit, *args))


def enqueue_advance(job_id: int) -> None:
    """Run the job's current stage (coordinate, investigate, plan, report) once this transaction commits."""
    send_on_commit("advance", job_id)


def enqueue_schedule(job_id: int) -> None:
    """Queue the steps that are ready, or move on once every step ended."""
    send_on_commit("schedule", job_id)


def enqueue_step(job_id: int, step_id: str) -> None:
    send_on_commit("step", job_id, step_id)


def enqueue_run(job_id: int, step_id: str, index: int) -> None:
    """One of the parallel runs of a heavy step (research/jobs/units/runs.py)."""
    send_on_commit("run", job_id, step_id, index)


def enqueue_render(job_id: int, kind: str) -> None:
    send_on_commit("render", job_id, kind)


def enqueue_followup(followup_id: int) -> None:
    """Answer a follow-up question about a finished report."""
    send_on_commit("followup", followup_id)


def enqueue_report_edit_check(check_id: int) -> None:
    """Check a long report edit in a worker and store it as a new version (research/jobs/services.py)."""
    send_on_commit("report_edit_check", check_id)


def enqueue_document_index(document_id: int) -> None:
    """Extract and index an uploaded knowledge-base document (research/knowledge/tasks.py)."""
    send_on_commit("kb_index", document_id)
