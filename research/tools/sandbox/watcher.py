"""Where no cgroup can be made: the host-side watcher of the sandbox's process tree."""

from __future__ import annotations

import os

from research.tools.sandbox.common import _read


class _TreeWatcher:
    """Where no cgroup can be made: sums the memory (PSS) and threads of the sandbox's process tree."""

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self.page = os.sysconf("SC_PAGE_SIZE")

    def tree(self) -> dict[int, int]:
        """{pid: threads} of root_pid and all its descendants (a PID namespace keeps orphans inside it)."""
        children: dict[int, list[int]] = {}
        threads: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat_line = _read(f"/proc/{entry.name}/stat")
            except OSError:
                continue
            rest = stat_line[stat_line.rfind(")") + 2 :].split()
            if len(rest) < 18:
                continue
            pid = int(entry.name)
            children.setdefault(int(rest[1]), []).append(pid)
            threads[pid] = int(rest[17])
        found: dict[int, int] = {}
        todo = [self.root_pid]
        while todo:
            pid = todo.pop()
            if pid in found:
                continue
            found[pid] = threads.get(pid, 1)
            todo.extend(children.get(pid, ()))
        return found

    def memory(self, pid: int) -> int:
        # PSS shares pages between the processes that map them (fork, shared libraries), so
        # forked workers are not counted many times over. A process we may not inspect
        # (non-dumpable) is counted by its RSS instead, which can only be larger.
        try:
            for line in _read(f"/proc/{pid}/smaps_rollup").splitlines():
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        try:
            return int(_read(f"/proc/{pid}/statm").split()[1]) * self.page
        except (OSError, ValueError, IndexError):
            return 0

    def sample(self) -> tuple[int, int, list[int]]:
        """(memory in bytes, threads, pids) of the whole tree now."""
        tree = self.tree()
        return sum(self.memory(pid) for pid in tree), sum(tree.values()), list(tree)
