"""A pytest plugin: a run stopped with SIGTERM (`timeout`, a cancelled CI job) stops as Ctrl-C does.

Without it, SIGTERM ends the pytest process at once and no fixture tears down, so the servers and
workers that fixtures started (a llama.cpp server, Celery workers, Redis, PostgreSQL) live on as
orphans, keep their ports and load the machine. As KeyboardInterrupt, pytest runs every teardown first.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
