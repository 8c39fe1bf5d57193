"""Today's date for the model's user turn.

It goes into the user message, never the system prompt: the system prefix stays byte-identical
from day to day (and job to job), so the server's prefix cache keeps serving it. Questions such as
"how cheap is solar now?" need the date to read "now" and to judge how old a source is.
"""

from __future__ import annotations

from datetime import UTC, date, datetime


def today(now: datetime | None = None) -> date:
    return (now or datetime.now(UTC)).astimezone(UTC).date()


def today_section(now: datetime | None = None) -> str:
    """A task-message section: "## Today\\n2026-11-23 (Monday, UTC)"."""
    day = today(now)
    return f"## Today\n{day.isoformat()} ({day.strftime('%A')}, UTC)"
