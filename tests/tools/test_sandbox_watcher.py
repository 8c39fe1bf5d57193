"""The watcher (the whole-tree limits where no cgroup can be made) over a real process tree, through psutil."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from research.tools.sandbox.watcher import _TreeWatcher

# A child that starts a grandchild in a new session (as sandboxed code may), then prints both pids.
TREE = """
import os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
print(os.getpid(), grandchild.pid, flush=True)
time.sleep(60)
"""


def _dies(proc: psutil.Process) -> bool:
    """Gone, or a zombie its new parent has not reaped yet (a container's init may never reap it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_the_watcher_sees_and_kills_the_whole_tree():
    root = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout is not None
        child_pid, grandchild_pid = map(int, root.stdout.readline().split())
        watcher = _TreeWatcher(root.pid)
        memory, threads, pids = watcher.sample()
        assert child_pid == root.pid and {root.pid, grandchild_pid} <= set(pids)
        assert threads >= 2
        # Two Python interpreters: several MB of proportional set size between them.
        assert memory > 4 * 1024 * 1024
        grandchild = psutil.Process(grandchild_pid)
        watcher.kill_all()
        assert root.wait(timeout=30) == -9
        assert _dies(grandchild)
        assert watcher.sample() == (0, 0, [])
    finally:
        if root.poll() is None:
            root.kill()
            root.wait()


def test_a_watcher_of_a_process_that_is_gone_sees_nothing():
    done = subprocess.Popen(["true"])
    done.wait()
    watcher = _TreeWatcher(done.pid)
    assert watcher.sample() == (0, 0, [])
    watcher.kill_all()  # nothing to kill, no error
