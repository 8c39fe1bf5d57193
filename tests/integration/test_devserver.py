"""`make run`'s supervisor: embedded Redis, worker, beat and web come up; SIGTERM stops every one of them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from research import runtime
from tests.support.procs import base_env

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


def test_run_serves_the_app_and_sigterm_stops_everything(django_db_setup, tmp_path):
    port, redis_port = runtime.free_port(), runtime.free_port()
    env = base_env(EMBEDDED_REDIS_PORT=str(redis_port))
    env.pop("REDIS_URL")  # unset: the supervisor must start its own Redis
    proc = subprocess.Popen([sys.executable, "-m", "research.devserver", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=(tmp_path / "run.log").open("wb"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            pytest.fail((tmp_path / "run.log").read_text())
        assert runtime.redis_alive(f"redis://127.0.0.1:{redis_port}/0")
        children = psutil.Process(proc.pid).children(recursive=True)
        cmdlines = [" ".join(c.cmdline()) for c in children]
        for needle in ("redis-server", "celery -A research worker", "celery -A research beat", "daphne"):
            assert any(needle in c for c in cmdlines), (needle, cmdlines)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=40) == 0
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, [" ".join(p.cmdline()) for p in alive]
        assert not runtime.redis_alive(f"redis://127.0.0.1:{redis_port}/0")
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
