"""A pytest run killed with SIGTERM still tears its fixtures down (tests/support/sigterm.py), so a server a
fixture started does not outlive it. The run is a real pytest process with a real child process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

INNER = '''
import subprocess, time
import pytest

@pytest.fixture
def server(tmp_path_factory):
    child = subprocess.Popen(["sleep", "600"])
    open({pidfile!r}, "w").write(str(child.pid))
    yield child
    child.terminate()
    child.wait()

def test_runs_long(server):
    time.sleep(600)
'''


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its new parent) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def _run_and_term(tmp_path: Path, plugin: bool) -> int:
    pidfile = tmp_path / "child.pid"
    (tmp_path / "test_inner.py").write_text(INNER.format(pidfile=str(pidfile)))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["PYTHONPATH"] = str(ROOT)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django", str(tmp_path)]
    if plugin:
        args[4:4] = ["-p", "tests.support.sigterm"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.05)
    child = int(pidfile.read_text())
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return child


def test_a_run_stopped_by_sigterm_tears_its_fixtures_down(tmp_path):
    child = _run_and_term(tmp_path, plugin=True)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_without_the_plugin_the_child_is_orphaned(tmp_path):
    # The premise: plain SIGTERM skips teardown (this is what the plugin is for).
    child = _run_and_term(tmp_path, plugin=False)
    try:
        time.sleep(0.5)
        assert _alive(child)
    finally:
        os.kill(child, signal.SIGKILL)
