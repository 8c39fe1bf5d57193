"""Runs the sandbox's command: reads its output and files, enforces the time and whole-tree limits."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

from research.tools.sandbox.cgroups import _Cgroup
from research.tools.sandbox.common import TRUNCATION_MARKER, Limits
from research.tools.sandbox.watcher import _TreeWatcher

_TICK_S = 0.1  # how often the supervisor checks the tree's memory / processes


class _Capped:
    """Keeps the first `limit` bytes of a stream and drops (but drains) the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.buf)
        if room > 0:
            self.buf += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def text(self) -> str:
        s = self.buf.decode("utf-8", errors="replace")
        return s + TRUNCATION_MARKER if self.truncated else s


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # bwrap leads its own process group (start_new_session). Killing it makes
    # the sandbox's PID 1 die (--die-with-parent), which tears down every
    # process in the PID namespace, including ones that called setsid().
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class _Supervisor:
    """Runs the command; reads stdout, stderr and the files pipe; enforces the time and whole-tree limits."""

    def __init__(
        self,
        cmd: list[str],
        timeout: float,
        limits: Limits,
        cgroup: _Cgroup | None,
        files_r: int,
        *,
        pass_fds: tuple[int, ...],
    ) -> None:
        self.timeout = timeout
        self.limits = limits
        self.cgroup = cgroup
        self.files_r = files_r
        self.out, self.err = _Capped(limits.output_bytes), _Capped(limits.output_bytes)
        # Room for the tar headers (a PAX header may take 1.5 KB per file) around the returned bytes.
        self.files = _Capped(limits.return_total_bytes + 4096 * (limits.return_max_files + 2) + 20480)
        self.timed_out = False
        self.killed = False  # by us, for time or memory: the files did not come back
        self.notes: list[str] = []
        self.rc = -1
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            pass_fds=pass_fds,
            env={"PATH": "/usr/bin:/bin"},
        )
        self.watcher = _TreeWatcher(self.proc.pid) if cgroup is None else None

    @property
    def stdout(self) -> str:
        return self.out.text()

    @property
    def stderr(self) -> str:
        text = self.err.text()
        if self.timed_out:
            text += f"\n[sandbox: killed after the {self.timeout:g} s time limit]\n"
        return text + "".join(self.notes)

    @property
    def files_blob(self) -> bytes:
        return bytes(self.files.buf)

    def kill(self, note: str | None = None) -> None:
        if note and not self.killed:
            self.notes.append(note)
        self.killed = True
        _kill_group(self.proc)
        if self.cgroup is not None:
            self.cgroup.kill_all()
        elif self.watcher is not None:
            self.watcher.kill_all()

    def check_tree(self) -> None:
        """Kill the whole tree once it passes its memory (or, for the watcher, process) limit."""
        limits = self.limits
        if self.cgroup is not None:
            # The kernel refuses forks past pids.max itself; past memory.max it OOM-kills one process
            # (cgroup v1; v2 with memory.oom.group kills them all). We take the rest of the tree with it.
            if self.cgroup.oom_kills():
                self.kill(self._memory_note())
            return
        assert self.watcher is not None
        memory, tasks, _pids = self.watcher.sample()
        if memory > limits.whole_tree_memory_bytes:
            self.kill(self._memory_note())
        elif tasks > limits.whole_tree_pids:
            self.kill(f"\n[sandbox: killed, the process tree had more than {limits.whole_tree_pids} "
                      f"processes and threads]\n")

    def _memory_note(self) -> str:
        return (f"\n[sandbox: killed, the process tree used more than {self.limits.whole_tree_memory_bytes} "
                f"bytes of memory]\n")

    def wait(self) -> None:
        proc = self.proc
        assert proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + self.timeout
        next_check = time.monotonic()
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, self.out)
        sel.register(proc.stderr, selectors.EVENT_READ, self.err)
        sel.register(self.files_r, selectors.EVENT_READ, self.files)
        try:
            open_streams = 3
            drain_until: float | None = None
            while open_streams:
                now = time.monotonic()
                if not self.killed and now >= deadline:
                    self.timed_out = True
                    self.kill()
                if self.killed:
                    # Keep what the tree wrote before the kill: drain the pipes until they close.
                    drain_until = drain_until or now + 5
                    if now >= drain_until:
                        break
                wait_s = _TICK_S if self.killed else min(deadline - now, _TICK_S)
                for key, _ in sel.select(timeout=max(wait_s, 0)):
                    fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
                    chunk = os.read(fd, 65536)
                    if chunk:
                        key.data.add(chunk)
                    else:
                        sel.unregister(key.fileobj)
                        open_streams -= 1
                if not self.killed and time.monotonic() >= next_check:
                    next_check = time.monotonic() + _TICK_S
                    self.check_tree()
            try:
                self.rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not self.killed else 5)
            except subprocess.TimeoutExpired:
                # Streams closed but bwrap lingers (e.g. a daemonized child kept it alive).
                self.timed_out = True
                self.kill()
                self.rc = proc.wait(timeout=5)
        finally:
            sel.close()
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait(timeout=5)
            else:
                _kill_group(proc)  # harmless if the group is gone already
            proc.stdout.close()
            proc.stderr.close()
        if self.cgroup is not None:
            if not self.killed and self.cgroup.oom_kills():
                # The OOM kill ended the tree before our next look: say so all the same.
                self.notes.append(self._memory_note())
            if self.cgroup.pids_refused():
                self.notes.append(f"\n[sandbox: forks were refused at the limit of {self.limits.whole_tree_pids} "
                                  f"processes and threads for the whole tree]\n")
