"""The sandbox's contract types, paths inside the sandbox, and the helpers every part shares."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

WORKDIR = "/sandbox"  # the code's cwd and HOME inside the sandbox: a tmpfs of Limits.workdir_bytes
INPUT_DIR = "/input"  # input files, read-only; the bootstrap copies them into WORKDIR
CODE_PATH = "/code/main.py"
BOOT_PATH = "/code/boot.py"
DEFAULT_TIMEOUT_S = 30.0
TRUNCATION_MARKER = "\n[... output truncated by the sandbox ...]\n"
_HIDDEN_PREFIX = "."  # dot-files (matplotlib cache, tmp) are not returned


class SandboxUnavailable(RuntimeError):
    """Isolation is not available here; the code was not run."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"python sandbox unavailable: {reason}")
        self.reason = reason


@dataclass
class RunResult:
    stdout: str
    stderr: str
    exit_code: int
    files: dict[str, bytes] = field(default_factory=dict)
    timed_out: bool = False
    limits_mode: str = ""  # how the whole-tree limits were enforced: "cgroup-v2", "cgroup-v1" or "watcher"


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 1024 * 1024 * 1024  # RLIMIT_AS per process; matplotlib + numpy fit in this
    nproc: int = 64  # RLIMIT_NPROC: processes and threads of the sandbox's uid
    file_bytes: int = 32 * 1024 * 1024  # RLIMIT_FSIZE, per file
    nofile: int = 256
    output_bytes: int = 1024 * 1024  # per stream
    workdir_bytes: int = 128 * 1024 * 1024  # size of the /sandbox tmpfs (inputs included): ENOSPC past it
    shm_bytes: int = 64 * 1024 * 1024  # size of the /dev/shm tmpfs (POSIX semaphores, shared memory)
    workdir_inodes: int = 100_000  # files + dirs in each tmpfs (their size counts pages only); the run ends past it
    whole_tree_memory_bytes: int = 1536 * 1024 * 1024  # all processes together (cgroup or watcher)
    whole_tree_pids: int = 96  # all processes and threads together, the sandbox's own helpers included
    return_file_bytes: int = 10 * 1024 * 1024  # one returned file
    return_total_bytes: int = 25 * 1024 * 1024
    return_max_files: int = 50


def _find_executable(name: str) -> str | None:
    """Locate a helper binary (a seam for tests that simulate a missing bwrap: the other modules call it as
    `common._find_executable`, so one patch of this module reaches them all)."""
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin")


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as fh:
        return fh.read()


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(value)
