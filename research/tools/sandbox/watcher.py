"""Where no cgroup can be made: the host-side watcher of the sandbox's process tree.

psutil walks the tree and reads each process's threads and memory from /proc: the parent links,
thread counts and PSS this module once parsed by hand (docs/tools.md, "Python sandbox").
"""

from __future__ import annotations

import psutil


class _TreeWatcher:
    """Where no cgroup can be made: sums the memory (PSS) and threads of the sandbox's process tree."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid

    def processes(self) -> list[psutil.Process]:
        """root_pid and all its descendants (a PID namespace keeps orphans inside it); [] once it is gone."""
        try:
            root = psutil.Process(self.root_pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    @staticmethod
    def memory(proc: psutil.Process) -> int:
        # PSS shares pages between the processes that map them (fork, shared libraries), so
        # forked workers are not counted many times over. A process we may not inspect
        # (non-dumpable) is counted by its RSS instead, which can only be larger.
        try:
            return int(proc.memory_full_info().pss)
        except psutil.NoSuchProcess:
            return 0
        except psutil.Error:
            pass
        try:
            return int(proc.memory_info().rss)
        except psutil.Error:
            return 0

    def sample(self) -> tuple[int, int, list[int]]:
        """(memory in bytes, threads, pids) of the whole tree now."""
        memory = threads = 0
        pids: list[int] = []
        for proc in self.processes():
            pids.append(proc.pid)
            with proc.oneshot():  # one read of /proc/<pid>/stat and status for both figures
                try:
                    threads += proc.num_threads()
                except psutil.Error:
                    threads += 1
                memory += self.memory(proc)
        return memory, threads, pids

    def kill_all(self) -> None:
        """SIGKILL every process of the tree (psutil checks a pid was not reused before it signals)."""
        for proc in self.processes():
            try:
                proc.kill()
            except psutil.Error:
                pass
