"""Whole-tree memory and process limits: a cgroup (v2 or v1) where one can be made, else the watcher
(watcher.py); which of the two, and whether production may run with the weaker one (docs/tools.md)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import signal
import threading
import time
from dataclasses import dataclass

import psutil

from research.tools.config import setting
from research.tools.sandbox.common import Limits, SandboxUnavailable, _read, _write

logger = logging.getLogger(__name__)


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
                        and not psutil.pid_exists(int(parts[1])):
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
