"""Run untrusted Python (the coder step's code) in a bubblewrap sandbox.

Isolation (docs/tools.md, "Python sandbox"): a separate process tree in new PID / network / IPC / UTS
namespaces, an empty environment, a root file system that holds only /usr, the
interpreter and the virtualenv's libraries (read-only), a tmpfs work dir of a
hard size, rlimits per process (CPU, address space, processes, file size, open
files), a limit on the memory and processes of the whole tree (a cgroup where
one can be made, else a host-side watcher), and a seccomp filter. Output and
returned files are capped. The whole tree is killed on timeout.

It fails closed: if bubblewrap, util-linux or libseccomp is missing, or bwrap
cannot create namespaces, the code is never run and `SandboxUnavailable` says why.

When the app runs as root, the sandboxed code is dropped to a throw-away uid
(setpriv, no capabilities, no_new_privs): the kernel never applies
RLIMIT_NPROC to uid 0, so a fork bomb would otherwise be uncontained. As any
other user bubblewrap makes its own user namespace, where RLIMIT_NPROC counts
only the sandbox's processes. Either way the code runs in a user namespace made
with --disable-userns (bwrap >= 0.8), so it cannot make one of its own.

Inside, a trusted bootstrap (research/tools/sandbox_boot.py) copies the input
files into the tmpfs, runs the code, and streams the files it wrote back to the
host as a tar over a pipe: the tmpfs disappears with the sandbox.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import importlib.util
import io
import logging
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from research.tools.config import setting

logger = logging.getLogger(__name__)

WORKDIR = "/sandbox"  # the code's cwd and HOME inside the sandbox: a tmpfs of Limits.workdir_bytes
INPUT_DIR = "/input"  # input files, read-only; the bootstrap copies them into WORKDIR
CODE_PATH = "/code/main.py"
BOOT_PATH = "/code/boot.py"
DEFAULT_TIMEOUT_S = 30.0
TRUNCATION_MARKER = "\n[... output truncated by the sandbox ...]\n"
_HIDDEN_PREFIX = "."  # dot-files (matplotlib cache, tmp) are not returned
_BOOT_SOURCE = Path(__file__).with_name("sandbox_boot.py")
_TICK_S = 0.1  # how often the supervisor checks the tree's memory / processes


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
    """Locate a helper binary (a seam for tests that simulate a missing bwrap)."""
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin")


# --- seccomp ---------------------------------------------------------------------

# Refused with EPERM: new namespaces and mounts, tracing other processes, kernel keyrings, BPF, kexec,
# file handles, perf, userfaultfd, kernel modules and the like. memfd_create and SysV shared memory
# too: their pages belong to no process, so the watcher (when no cgroup can be made) would not see them.
_BLOCKED_SYSCALLS = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "reboot", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "name_to_handle_at",
    "swapon", "swapoff", "acct", "quotactl", "syslog",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "memfd_create", "memfd_secret", "shmget", "shmat",
)  # fmt: skip
# clone() with any namespace flag is refused too; clone3() passes its flags in memory a filter cannot
# read, so it answers ENOSYS and the C library falls back to clone() (as Docker's default profile does).
_CLONE_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                          0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
# Watcher mode only (no cgroup charges kernel memory to the tree): no sockets at all. A socket's buffers
# belong to no process, so the watcher cannot see them, and nothing else bounds how many a tree opens
# (60 children x 256 socketpairs queued 3 GiB past a 1.5 GiB limit). The sandbox has no network, so this
# costs only local IPC over sockets (asyncio's event loop, multiprocessing.Pipe(duplex=True), Managers);
# pipes (multiprocessing.Pool, Queue, subprocess) stay, and their buffers have a per-user kernel cap.
_WATCHER_BLOCKED_SYSCALLS = ("socket", "socketpair")
_seccomp_lock = threading.Lock()
_seccomp_cache: dict[tuple[str, ...], bytes] = {}


def _blocked_syscalls() -> tuple[str, ...]:
    """The syscalls the filter refuses (a seam: a test builds an empty filter to compare against)."""
    return _BLOCKED_SYSCALLS


def _seccomp_program(*, watcher: bool = False) -> bytes:
    """The compiled BPF filter for bwrap --seccomp; SandboxUnavailable when libseccomp is missing.

    `watcher`: the whole-tree limits are the watcher's, so sockets are refused too.
    """
    blocked = _blocked_syscalls()
    if watcher and blocked:
        blocked = (*blocked, *_WATCHER_BLOCKED_SYSCALLS)
    with _seccomp_lock:
        if blocked in _seccomp_cache:
            return _seccomp_cache[blocked]
        try:
            import pyseccomp  # ctypes over the system's libseccomp.so.2
        except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: "Unable to find libseccomp"
            raise SandboxUnavailable(f"seccomp is not available (pyseccomp / libseccomp2): {exc}") from exc
        try:
            filt = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
            for name in blocked:
                filt.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
            if blocked:
                for flag in _CLONE_NAMESPACE_FLAGS:
                    filt.add_rule(pyseccomp.ERRNO(errno.EPERM), "clone",
                                  pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
                filt.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
            with tempfile.TemporaryFile() as fh:
                filt.export_bpf(fh)
                fh.seek(0)
                program = fh.read()
        except (OSError, RuntimeError, ValueError) as exc:
            raise SandboxUnavailable(f"cannot build the seccomp filter: {exc}") from exc
        if not program:
            raise SandboxUnavailable("cannot build the seccomp filter: libseccomp exported nothing")
        _seccomp_cache[blocked] = program
        return program


# --- whole-tree limits: cgroups, else a watcher -------------------------------------------


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as fh:
        return fh.read()


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(value)


def _counter(path: str, key: str) -> int:
    """`key N` from a flat-keyed cgroup file (memory.events, pids.events, memory.oom_control)."""
    try:
        for line in _read(path).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
    except (OSError, ValueError):
        pass
    return 0


def _cgroup_mounts() -> tuple[str | None, dict[str, tuple[str, str]]]:
    """(cgroup2 mount point, {v1 controller: (mount point, mount root)}) from /proc/self/mountinfo."""
    v2: str | None = None
    v1: dict[str, tuple[str, str]] = {}
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, mount_point, fstype = fields[3], fields[4], tail[0]
        if fstype == "cgroup2" and v2 is None:
            v2 = mount_point
        elif fstype == "cgroup":
            for opt in tail[2].split(","):
                if opt in ("memory", "pids"):
                    v1[opt] = (mount_point, root)
    return v2, v1


def _own_cgroups() -> dict[str, str]:
    """{controller or "" for v2: path} from /proc/self/cgroup."""
    own: dict[str, str] = {}
    for line in _read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                own[name] = parts[2]
    return own


def _under(mount_point: str, mount_root: str, path: str) -> str:
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root):]
    return os.path.normpath(mount_point + "/" + path.lstrip("/"))


@dataclass(frozen=True)
class _CgroupSupport:
    mode: str  # "cgroup-v2" or "cgroup-v1"
    parents: dict[str, str]  # v2: {"": dir}; v1: {"memory": dir, "pids": dir}


class _Cgroup:
    """One run's cgroup(s): made with the limits before the tree starts, removed after it."""

    def __init__(self, support: _CgroupSupport, limits: Limits) -> None:
        self.mode = support.mode
        name = f"sandbox-{os.getpid()}-{secrets.token_hex(4)}"
        self.dirs = {key: os.path.join(parent, name) for key, parent in support.parents.items()}
        try:
            for d in self.dirs.values():
                os.mkdir(d)
            if self.mode == "cgroup-v2":
                d = self.dirs[""]
                _write(f"{d}/memory.max", str(limits.whole_tree_memory_bytes))
                for fname, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    if os.path.exists(f"{d}/{fname}"):
                        _write(f"{d}/{fname}", value)
                _write(f"{d}/pids.max", str(limits.whole_tree_pids))
            else:
                mem = self.dirs["memory"]
                _write(f"{mem}/memory.limit_in_bytes", str(limits.whole_tree_memory_bytes))
                if os.path.exists(f"{mem}/memory.memsw.limit_in_bytes"):  # memory + swap: no swap on top
                    _write(f"{mem}/memory.memsw.limit_in_bytes", str(limits.whole_tree_memory_bytes))
                _write(f"{self.dirs['pids']}/pids.max", str(limits.whole_tree_pids))
        except OSError as exc:
            self.remove()
            raise SandboxUnavailable(f"cannot set up the sandbox's cgroup ({self.mode}): {exc}") from exc

    @property
    def procs_files(self) -> list[str]:
        return [f"{d}/cgroup.procs" for d in self.dirs.values()]

    def oom_kills(self) -> int:
        if self.mode == "cgroup-v2":
            return _counter(f"{self.dirs['']}/memory.events", "oom_kill")
        return _counter(f"{self.dirs['memory']}/memory.oom_control", "oom_kill")

    def pids_refused(self) -> int:
        return _counter(f"{self.dirs.get('pids') or self.dirs['']}/pids.events", "max")

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in _read(procs).split())
        return found

    def kill_all(self) -> None:
        if self.mode == "cgroup-v2" and os.path.exists(f"{self.dirs['']}/cgroup.kill"):
            with contextlib.suppress(OSError):
                _write(f"{self.dirs['']}/cgroup.kill", "1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left and remove the cgroup(s); a leftover is logged, never fatal."""
        deadline = time.monotonic() + 5
        for d in self.dirs.values():
            while os.path.isdir(d):
                try:
                    os.rmdir(d)
                except OSError as exc:
                    if exc.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > deadline:
                        logger.warning("sandbox: cannot remove cgroup %s: %s", d, exc)
                        break
                    self.kill_all()
                    time.sleep(0.05)


def _remove_stale(support: _CgroupSupport) -> None:
    """Empty cgroups left by a process that died mid-run (a SIGKILLed worker): its sandbox died with it."""
    for parent in support.parents.values():
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                parts = entry.name.split("-")
                if len(parts) == 3 and parts[0] == "sandbox" and parts[1].isdigit() \
                        and not os.path.exists(f"/proc/{parts[1]}"):
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.path)  # refused while it still holds a process


def _try_cgroup(support: _CgroupSupport) -> str | None:
    """None when a child cgroup with both limits can be made (and removed) here, else why not."""
    _remove_stale(support)
    try:
        _Cgroup(support, Limits()).remove()
    except SandboxUnavailable as exc:
        return exc.reason
    return None


def _delegated_parent(parent: str) -> tuple[_CgroupSupport | None, str]:
    """SANDBOX_CGROUP_PARENT: a cgroup v2 directory delegated to this process's user (docs/tools.md:
    the docker-compose worker's entrypoint makes one), with memory and pids for its children."""
    try:
        available = set(_read(f"{parent}/cgroup.controllers").split())
        if not {"memory", "pids"} <= available:
            return None, f"SANDBOX_CGROUP_PARENT={parent}: memory and pids controllers not available"
        if not {"memory", "pids"} <= set(_read(f"{parent}/cgroup.subtree_control").split()):
            _write(f"{parent}/cgroup.subtree_control", "+memory +pids")
    except OSError as exc:
        return None, f"SANDBOX_CGROUP_PARENT={parent}: {exc}"
    support = _CgroupSupport("cgroup-v2", {"": parent})
    failed = _try_cgroup(support)
    return (support, "ok") if failed is None else (None, failed)


def _detect_cgroups() -> tuple[_CgroupSupport | None, str]:
    parent = str(setting("SANDBOX_CGROUP_PARENT", None) or os.environ.get("SANDBOX_CGROUP_PARENT") or "")
    if parent:
        return _delegated_parent(os.path.normpath(parent))
    try:
        v2_mount, v1_mounts = _cgroup_mounts()
        own = _own_cgroups()
    except OSError as exc:
        return None, f"cannot read the process's cgroups: {exc}"
    why: list[str] = []
    if v2_mount and "" in own:
        d = _under(v2_mount, "/", own[""])
        try:
            available = _read(f"{d}/cgroup.controllers").split()
        except OSError:
            available = []
        if {"memory", "pids"} <= set(available):
            try:
                enabled = _read(f"{d}/cgroup.subtree_control").split()
                if not {"memory", "pids"} <= set(enabled):
                    # Fails (EBUSY) while this cgroup holds processes, unless it is a root: see docs/tools.md.
                    _write(f"{d}/cgroup.subtree_control", "+memory +pids")
                support = _CgroupSupport("cgroup-v2", {"": d})
                failed = _try_cgroup(support)
                if failed is None:
                    return support, "ok"
                why.append(failed)
            except OSError as exc:
                why.append(f"cgroup v2 {d}: memory and pids cannot be delegated to a child ({exc})")
        else:
            why.append(f"cgroup v2 {d}: memory and pids controllers not available")
    if "memory" in v1_mounts and "pids" in v1_mounts and "memory" in own and "pids" in own:
        parents = {c: _under(*v1_mounts[c], own[c]) for c in ("memory", "pids")}
        support = _CgroupSupport("cgroup-v1", parents)
        failed = _try_cgroup(support)
        if failed is None:
            return support, "ok"
        why.append(failed)
    elif not why:
        why.append("no cgroup hierarchy with the memory and pids controllers")
    return None, "; ".join(why)


_limits_lock = threading.Lock()
_cgroup_detected: tuple[_CgroupSupport | None, str] | None = None
_logged_modes: set[str] = set()


def _cgroup_support() -> tuple[_CgroupSupport | None, str]:
    global _cgroup_detected
    with _limits_lock:
        if _cgroup_detected is None:
            _cgroup_detected = _detect_cgroups()
        return _cgroup_detected


def _weak_limits_allowed() -> bool:
    """SANDBOX_ALLOW_WEAK_LIMITS (setting or environment); unset: yes, except under SECURE_PRODUCTION."""
    value = setting("SANDBOX_ALLOW_WEAK_LIMITS", None)
    if value is None:
        raw = os.environ.get("SANDBOX_ALLOW_WEAK_LIMITS")
        if raw is None:
            return os.environ.get("SECURE_PRODUCTION", "").lower() not in ("1", "true", "yes", "on")
        return raw.lower() in ("1", "true", "yes", "on")
    return bool(value)


def limits_mode(*, refuse_weak: bool = True) -> str:
    """How the whole-tree memory and process limits are enforced: "cgroup-v2", "cgroup-v1" or "watcher".

    `SANDBOX_LIMITS` (setting or environment): "auto" (default) uses a cgroup where one can be made
    and the watcher otherwise; "cgroup" insists on a cgroup (SandboxUnavailable without); "watcher"
    always uses the watcher. Where weak limits are not allowed (production, see _weak_limits_allowed)
    the watcher is refused: SandboxUnavailable. Logged once per mode.
    """
    wanted = str(setting("SANDBOX_LIMITS", None) or os.environ.get("SANDBOX_LIMITS") or "auto").lower()
    if wanted not in ("auto", "cgroup", "watcher"):
        raise SandboxUnavailable(f"SANDBOX_LIMITS must be auto, cgroup or watcher, not {wanted!r}")
    if wanted == "watcher":
        mode, why = "watcher", "SANDBOX_LIMITS=watcher"
    else:
        support, why = _cgroup_support()
        if support is None and wanted == "cgroup":
            raise SandboxUnavailable(f"SANDBOX_LIMITS=cgroup, but no cgroup can be made: {why}")
        mode = support.mode if support else "watcher"
    if mode == "watcher" and refuse_weak and not _weak_limits_allowed():
        raise SandboxUnavailable(
            f"the whole-tree limits would only be watched, not enforced by a cgroup ({why}); production "
            "runs no code that way: give the worker a delegated cgroup (docs/tools.md) or set "
            "SANDBOX_ALLOW_WEAK_LIMITS=1")
    with _limits_lock:
        if mode not in _logged_modes:
            _logged_modes.add(mode)
            logger.info("sandbox: whole-tree limits by %s%s", mode, f" ({why})" if mode == "watcher" else "")
    return mode


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


# --- building the command ------------------------------------------------------


def _python_binds() -> tuple[list[str], str]:
    """Read-only binds that make this interpreter and its virtualenv usable.

    Only the interpreter prefix and the venv's lib/ and pyvenv.cfg are bound,
    never the project directory that may contain the venv (.venv inside the
    repository). Returns (bwrap args, python path to run inside).
    """
    args: list[str] = []
    made: set[str] = {"/", "/usr"}

    def ensure_parents(path: str) -> None:
        # bwrap creates missing parents as 0700 dirs the dropped uid cannot
        # traverse, so create each one explicitly with 0755.
        parts = Path(path).parent.parts
        for i in range(2, len(parts) + 1):
            d = "/".join(parts[:i]).replace("//", "/")
            if d not in made:
                made.add(d)
                args.extend(["--perms", "0755", "--dir", d])

    def ro_bind(path: str) -> None:
        if path == "/usr" or path.startswith("/usr/"):
            return  # already bound
        ensure_parents(path)
        args.extend(["--ro-bind", path, path])
        made.add(path)

    base = os.path.realpath(sys.base_prefix)
    ro_bind(base)
    exe = sys.executable
    if sys.prefix != sys.base_prefix:  # a virtualenv
        venv = sys.prefix
        for sub in ("lib", "lib64"):
            p = os.path.join(venv, sub)
            if os.path.islink(p):
                ensure_parents(p)
                args.extend(["--symlink", os.readlink(p), p])
            elif os.path.isdir(p):
                ro_bind(p)
        cfg = os.path.join(venv, "pyvenv.cfg")
        if os.path.isfile(cfg):
            ro_bind(cfg)
        real = os.path.realpath(exe)
        if os.path.islink(exe) and real.startswith((base + "/", "/usr/")):
            # Recreate the venv's python symlink so Python finds pyvenv.cfg
            # next to it and puts the venv's site-packages on sys.path.
            ensure_parents(exe)
            args.extend(["--symlink", real, exe])
        else:
            ro_bind(exe)
    return args, exe


def _base_args(as_root: bool) -> list[str]:
    args = [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]
    if not as_root:
        # Our own user namespace, in which no further one may be made (bwrap >= 0.8).
        args += ["--unshare-user", "--disable-userns"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    # Font configuration only (matplotlib/fontconfig read it); nothing else of /etc.
    if os.path.isdir("/etc/fonts"):
        args += ["--perms", "0755", "--dir", "/etc", "--ro-bind", "/etc/fonts", "/etc/fonts"]
    args += ["--proc", "/proc"]
    if as_root:
        # The inner bwrap (see _drop_privileges_args) needs a mount point for its own scratch tmpfs, and
        # mount points for the tmpfs it puts on /sandbox; root-owned 0755, so the code cannot write here.
        args += ["--dev", "/dev", "--perms", "0755", "--dir", "/tmp", "--perms", "0755", "--dir", WORKDIR]
    return args


def _workdir_args(limits: Limits, seccomp_fd: int) -> list[str]:
    """For the bwrap that runs the code: /dev, the tmpfs work dir and /dev/shm, both of a hard size, and
    the seccomp filter (applied right before it execs the bootstrap, so bwrap itself may still mount)."""
    return [
        "--dev", "/dev",
        # The code's uid owns this bwrap's /dev tmpfs, which has no size: read-only, except a capped /dev/shm.
        "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm",
        "--remount-ro", "/dev",
        "--size", str(limits.workdir_bytes), "--tmpfs", WORKDIR,
        "--seccomp", str(seccomp_fd),
        "--chdir", WORKDIR,
    ]  # fmt: skip


def _env_args(python: str) -> list[str]:
    env = {
        "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": WORKDIR,
        "TMPDIR": f"{WORKDIR}/.tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{WORKDIR}/.matplotlib",
        # One BLAS thread: threads count against the process limit and each
        # reserves address space.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    args = ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _limit_args(limits: Limits, cpu_s: int) -> list[str]:
    prlimit = _find_executable("prlimit") or "/usr/bin/prlimit"
    return [
        prlimit,
        f"--cpu={cpu_s}:{cpu_s + 1}",
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.nproc}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.nofile}",
        "--core=0",
        "--",
    ]


def _drop_privileges_args(uid: int) -> list[str]:
    setpriv = _find_executable("setpriv") or "/usr/bin/setpriv"
    return [
        "--cap-add",
        "CAP_SETUID,CAP_SETGID,CAP_SETPCAP",
        "--",
        setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        # Now unprivileged, a second bwrap makes a user namespace in which no further one may be made
        # (bwrap >= 0.8): without it the code could unshare(CLONE_NEWUSER), gain capabilities there and
        # mount a tmpfs that no limit counts. The file system is the outer sandbox's, bound as it is.
        _find_executable("bwrap") or "/usr/bin/bwrap",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--bind", "/", "/",  # recursive: /proc and the read-only binds stay as the outer made them
    ]  # fmt: skip


# Joins each cgroup named before "--" (writing its own pid into cgroup.procs), then execs the rest:
# the whole tree is inside the cgroup before bwrap starts, so before any untrusted code runs.
_CGROUP_ENTER = (
    'while [ "$1" != -- ]; do echo $$ > "$1" || { echo "sandbox-cgroup: cannot join $1" >&2; exit 125; }; '
    'shift; done; shift; exec "$@"'
)


def _command(
    bwrap: str,
    base: str,
    uid: int | None,
    limits: Limits,
    cpu_s: int,
    *,
    seccomp_fd: int,
    files_fd: int,
    cgroup: _Cgroup | None,
) -> list[str]:
    as_root = uid is not None
    py_args, python = _python_binds()
    cmd = [bwrap, *_base_args(as_root), *py_args]
    cmd += ["--ro-bind", os.path.join(base, "in"), INPUT_DIR]
    cmd += ["--perms", "0755", "--dir", "/code", "--ro-bind", os.path.join(base, "main.py"), CODE_PATH]
    cmd += ["--ro-bind", os.path.join(base, "boot.py"), BOOT_PATH]
    cmd += _env_args(python)
    if uid is not None:
        cmd += _drop_privileges_args(uid)
    cmd += [*_workdir_args(limits, seccomp_fd), "--"]
    # The bootstrap (-I -S: no environment, no site-packages) runs outside the rlimits; the code under them.
    # -E: ignore PYTHON* variables, -s: no user site, -u: unbuffered so output written before a kill is
    # not lost.
    caps = [limits.return_file_bytes, limits.return_total_bytes, limits.return_max_files, limits.workdir_inodes]
    cmd += [python, "-I", "-S", "-u", BOOT_PATH, str(files_fd), *map(str, caps), "--"]
    cmd += [*_limit_args(limits, cpu_s), python, "-E", "-s", "-u", CODE_PATH]
    if cgroup is not None:
        sh = _find_executable("sh") or "/bin/sh"
        cmd = [sh, "-c", _CGROUP_ENTER, "sh", *cgroup.procs_files, "--", *cmd]
    return cmd


# --- availability probe (cached) -------------------------------------------------

_probe_lock = threading.Lock()
_probe_result: tuple[bool, str] | None = None


def _sandbox_uid() -> int | None:
    """A throw-away uid for root; None when not root (bwrap maps our own uid)."""
    if os.geteuid() != 0:
        return None
    return 1_000_000 + secrets.randbelow(900_000)


def sandbox_probe(*, refresh: bool = False) -> tuple[bool, str]:
    """(available, reason). Runs a trivial sandboxed python once and caches the answer."""
    global _probe_result
    with _probe_lock:
        if _probe_result is not None and not refresh:
            return _probe_result
        _probe_result = _probe()
        return _probe_result


def reset_probe() -> None:
    global _probe_result
    with _probe_lock:
        _probe_result = None


def _probe() -> tuple[bool, str]:
    if not sys.platform.startswith("linux"):
        return False, "bubblewrap sandboxing needs Linux"
    bwrap = _find_executable("bwrap")
    if not bwrap:
        return False, "bubblewrap (bwrap) is not installed"
    needed = ["prlimit"] + (["setpriv"] if os.geteuid() == 0 else [])
    for tool in needed:
        if not _find_executable(tool):
            return False, f"util-linux '{tool}' is not installed"
    try:
        _seccomp_program()
        result = _execute(bwrap, "import sys; print('sandbox-ok')", {}, 20.0, Limits(), probing=True)
    except SandboxUnavailable as exc:
        return False, exc.reason
    except OSError as exc:
        return False, f"cannot start bwrap: {exc}"
    if result.exit_code != 0 or "sandbox-ok" not in result.stdout:
        detail = (result.stderr or result.stdout).strip()[:500]
        return False, f"bwrap cannot create the sandbox (exit {result.exit_code}): {detail}"
    return True, "ok"



# --- matplotlib font cache ---------------------------------------------------------

_mpl_lock = threading.Lock()
_mpl_cache: list[str] | None = None


def _matplotlib_cache_files() -> list[str]:
    """Font-cache files built once, by a trusted host-side process, for all runs.

    Without them every sandboxed run rebuilds matplotlib's font list (seconds).
    The cache is never taken from a sandboxed run, so one run can't poison the
    next. The paths in it are valid inside the sandbox because the interpreter,
    venv and /usr are bound at their real paths.
    """
    global _mpl_cache
    with _mpl_lock:
        if _mpl_cache is not None:
            return _mpl_cache
        _mpl_cache = []
        if importlib.util.find_spec("matplotlib") is None:
            return _mpl_cache
        cache_dir = tempfile.mkdtemp(prefix="sandbox-mplcache-")
        atexit.register(shutil.rmtree, cache_dir, True)
        try:
            subprocess.run(
                [sys.executable, "-c", "import matplotlib.font_manager"],
                env={"PATH": "/usr/bin:/bin", "MPLCONFIGDIR": cache_dir, "HOME": cache_dir, "MPLBACKEND": "Agg"},
                capture_output=True,
                timeout=120,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return _mpl_cache
        _mpl_cache = [str(p) for p in Path(cache_dir).glob("fontlist-*.json")]
        return _mpl_cache


# --- running ------------------------------------------------------------------------


def run_python(
    code: str,
    files: dict[str, bytes] | None = None,
    timeout: float | None = None,
    *,
    limits: Limits | None = None,
    backend: str | None = None,
) -> RunResult:
    """Run `code` as a Python script in the sandbox; its cwd holds `files`.

    Files it writes in the cwd (not dot-files) come back in `RunResult.files` when it ends by itself;
    a run killed for its time or memory returns none. Raises SandboxUnavailable, without running
    anything, when isolation is missing.
    """
    chosen = (backend or setting("SANDBOX_BACKEND", None) or os.environ.get("SANDBOX_BACKEND") or "bwrap").lower()
    if chosen != "bwrap":
        # Only bubblewrap isolates the file system here; anything else would
        # run the code with less isolation than documented, so refuse.
        raise SandboxUnavailable(f"unsupported sandbox backend {chosen!r} (only 'bwrap' is implemented)")
    limits_mode()  # refuses unknown or (in production) weak limits before anything starts; not cached
    ok, reason = sandbox_probe()
    if not ok:
        raise SandboxUnavailable(reason)
    bwrap = _find_executable("bwrap")
    if not bwrap:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
    if timeout is None:
        timeout = float(setting("SANDBOX_TIMEOUT_S", DEFAULT_TIMEOUT_S))
    return _execute(bwrap, code, files or {}, float(timeout), limits or Limits())


def _safe_relpath(name: str) -> str:
    p = Path(name)
    if not name or p.is_absolute() or any(part in ("..", "") for part in p.parts) or "\x00" in name:
        raise ValueError(f"invalid sandbox file name: {name!r}")
    return str(p)


def _write_inputs(indir: str, files: dict[str, bytes], probing: bool) -> None:
    """The read-only input dir the bootstrap copies into the tmpfs; readable by the sandbox's uid."""
    os.mkdir(indir)
    os.chmod(indir, 0o755)  # noqa: S103 - the sandbox's uid reads it
    cache = [] if probing else _matplotlib_cache_files()
    entries = [(os.path.join(".matplotlib", os.path.basename(c)), Path(c).read_bytes()) for c in cache]
    entries += [(_safe_relpath(name), data) for name, data in files.items()]
    for rel, data in entries:
        target = os.path.join(indir, rel)
        parent = os.path.dirname(target)
        os.makedirs(parent, exist_ok=True)
        while parent != indir:  # makedirs obeys the umask
            os.chmod(parent, 0o755)  # noqa: S103
            parent = os.path.dirname(parent)
        with open(target, "wb") as fh:
            fh.write(data)
        os.chmod(target, 0o644)


def _execute(
    bwrap: str, code: str, files: dict[str, bytes], timeout: float, limits: Limits, *, probing: bool = False
) -> RunResult:
    mode = limits_mode(refuse_weak=not probing)  # the probe is cached: it tests isolation, not this policy
    program = _seccomp_program(watcher=mode == "watcher")
    base = tempfile.mkdtemp(prefix="sandbox-")
    cgroup: _Cgroup | None = None
    files_r = files_w = -1
    try:
        _write_inputs(os.path.join(base, "in"), files, probing)
        for name, text in (("main.py", code), ("boot.py", _BOOT_SOURCE.read_text(encoding="utf-8"))):
            path = os.path.join(base, name)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(path, 0o644)
        with tempfile.TemporaryFile(dir=base) as bpf:
            bpf.write(program)
            bpf.flush()
            bpf.seek(0)
            files_r, files_w = os.pipe()
            if mode != "watcher":
                support, _why = _cgroup_support()
                assert support is not None  # limits_mode said so
                cgroup = _Cgroup(support, limits)
            cpu_s = max(1, int(timeout) + 1)
            cmd = _command(bwrap, base, _sandbox_uid(), limits, cpu_s,
                           seccomp_fd=bpf.fileno(), files_fd=files_w, cgroup=cgroup)
            run = _Supervisor(cmd, timeout, limits, cgroup, files_r, pass_fds=(bpf.fileno(), files_w))
            os.close(files_w)
            files_w = -1
            run.wait()
        if cgroup is not None and run.rc == 125 and run.stderr.startswith("sandbox-cgroup:"):
            raise SandboxUnavailable(run.stderr.strip()[:500])  # the tree never started
        if not probing and run.rc != 0 and not run.stdout and run.stderr.startswith("bwrap:"):
            # bwrap itself failed to build the sandbox: nothing ran.
            raise SandboxUnavailable(run.stderr.strip()[:500])
        out_files = {} if probing or run.killed else _parse_files(run.files_blob, files, limits)
        return RunResult(stdout=run.stdout, stderr=run.stderr, exit_code=run.rc, files=out_files,
                         timed_out=run.timed_out, limits_mode=mode)
    finally:
        for fd in (files_r, files_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if cgroup is not None:
            cgroup.remove()
        shutil.rmtree(base, ignore_errors=True)


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
            with contextlib.suppress(OSError):
                for pid in self.watcher.tree():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)

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


def _parse_files(blob: bytes, inputs: dict[str, bytes], limits: Limits) -> dict[str, bytes]:
    """The bootstrap's tar of the work dir: regular files with safe names, within the caps, not unchanged inputs.

    The stream is the sandbox's to write, so nothing in it is trusted: it is only read in memory (never
    extracted), links and devices are skipped, a broken or cut stream keeps the files before the break.
    """
    result: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as tar:
            for member in tar:
                if not member.isreg() or member.size > limits.return_file_bytes:
                    continue
                try:
                    rel = _safe_relpath(member.name)
                except ValueError:
                    continue
                if any(part.startswith(_HIDDEN_PREFIX) for part in Path(rel).parts) or rel in result:
                    continue
                if len(result) >= limits.return_max_files or total + member.size > limits.return_total_bytes:
                    break
                fh = tar.extractfile(member)
                data = fh.read() if fh is not None else b""
                if len(data) != member.size:
                    break  # cut short
                if inputs.get(rel) == data:
                    continue
                result[rel] = data
                total += len(data)
    except (tarfile.TarError, EOFError, OSError, ValueError):
        pass
    return result
