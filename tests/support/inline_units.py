"""Worker units run inline in the test process: the broker is a list, and `drain` runs what was sent."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection
from typing import Any

import pytest

from research.jobs import dispatch
from research.jobs.units import lease, renders, runs, stages, steps

RUNNERS: dict[str, Callable[..., None]] = {
    "advance": lambda job_id: stages.job_advance(job_id=job_id),
    "schedule": lambda job_id: steps.job_schedule(job_id=job_id),
    "step": lambda job_id, step_id: steps.step_run(job_id=job_id, step_id=step_id),
    "run": lambda job_id, step_id, index: runs.run_research(job_id=job_id, step_id=step_id, index=index),
    "render": lambda job_id, kind: renders.output_render(job_id=job_id, kind=kind),
}


def inline_broker(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The units dispatch would send, in order, instead of sending them."""
    units: list[tuple[Any, ...]] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: units.append(a))
    # Units run inline here: no lease-renewing side thread (its own DB connection would close the test's).
    monkeypatch.setattr(lease, "lease_kept", lambda *a, **k: contextlib.nullcontext())
    return units


def drain(sent: list[tuple[Any, ...]], *, kinds: Collection[str] = tuple(RUNNERS),
          skip: Callable[[tuple[Any, ...]], bool] = lambda unit: False, limit: int = 400) -> list[tuple[Any, ...]]:
    """Run the queued units of `kinds` inline, in the order they were sent, until none is left (units of
    other known kinds are dropped; an unknown kind fails the test); return the ones `skip` held back."""
    held: list[tuple[Any, ...]] = []
    for _ in range(limit):
        if not sent:
            return held
        unit = sent.pop(0)
        if unit[0] not in RUNNERS:
            raise AssertionError(f"no inline runner for the unit {unit!r}")
        if skip(unit):
            held.append(unit)
        elif unit[0] in kinds:
            RUNNERS[unit[0]](*unit[1:])
    raise AssertionError("units kept coming")
