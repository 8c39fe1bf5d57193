"""Sort tests into lanes by what they start, so `make test-fast` can select the unit tests by marker.

Every test gets exactly one of three markers: `browser` (drives chromium), `integration` (a real Redis,
Celery worker, daphne, PostgreSQL or model server), or `unit` (none of these). A test is `integration` or
`browser` when it says so, when it lives in a folder of such tests, or when it asks for a fixture that
starts one of those parts; everything else is `unit`.

A mark can be forgotten, so the fast lane also enforces it: with TEST_FAST=1 (set by `make test-fast`)
starting any of those parts from the test process fails the test with a message naming the marker it
needs, instead of quietly making the fast lane slow.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

LANES = ("unit", "integration", "browser")

# Folders whose every test needs real services.
FOLDER_LANES = {"integration": "integration", "faults": "integration", "scale": "integration",
                "models": "integration", "e2e": "browser"}
# Fixtures that start real services (tests/conftest.py, tests/e2e/conftest.py).
FIXTURE_LANES = {"redis_server": "integration", "worker": "integration", "asgi_server": "integration",
                 "stack_env": "integration", "browser": "browser", "page": "browser"}
# Programs the fast lane refuses to start (matched against the argv's program names).
SLOW_PROGRAMS = ("redis-server", "celery", "daphne", "postgres", "pg_ctl", "initdb", "chromium", "llama_cpp")

TESTS_ROOT = Path(__file__).resolve().parent.parent


def lane_of(item: pytest.Item) -> str:
    for lane in ("browser", "integration"):
        if item.get_closest_marker(lane) is not None:
            return lane
    parts = Path(str(item.path)).resolve().relative_to(TESTS_ROOT).parts
    if parts and parts[0] in FOLDER_LANES:
        return FOLDER_LANES[parts[0]]
    lanes = {FIXTURE_LANES[name] for name in getattr(item, "fixturenames", ()) if name in FIXTURE_LANES}
    if "browser" in lanes:
        return "browser"
    return "integration" if lanes else "unit"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        lane = lane_of(item)
        if item.get_closest_marker(lane) is None:
            item.add_marker(getattr(pytest.mark, lane))


def _program_names(args: Any) -> list[str]:
    """The program an argv runs: its executable's name, and the module of `python -m MODULE`."""
    argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args or ())
    words = [os.fsdecode(arg) for arg in argv[:3] if isinstance(arg, str | bytes | os.PathLike)]
    if not words:
        return []
    names = [Path(words[0].split()[0] if len(argv) == 1 else words[0]).name]
    if len(words) >= 3 and words[1] == "-m":
        names.append(words[2])
    return names


class SlowPartStarted(RuntimeError):
    """A test in the fast lane started a real service; mark it `integration` (or `browser`)."""


def refuse_slow_programs(args: Any) -> None:
    names = _program_names(args)
    for program in SLOW_PROGRAMS:
        if any(program in name for name in names):
            raise SlowPartStarted(
                f"make test-fast runs unit tests only, and this test started {program!r}: mark it "
                f"@pytest.mark.integration (or browser), or use a fixture that does (tests/support/lanes.py)")


_original_popen_init = subprocess.Popen.__init__


def _guarded_popen_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
    refuse_slow_programs(args)
    _original_popen_init(self, args, *rest, **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("TEST_FAST") == "1":
        subprocess.Popen.__init__ = _guarded_popen_init  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _original_popen_init  # type: ignore[method-assign]
