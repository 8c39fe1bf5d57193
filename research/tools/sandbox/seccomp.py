"""The seccomp filter bwrap applies to the sandboxed code (docs/tools.md, "Python sandbox")."""

from __future__ import annotations

import errno
import tempfile
import threading

from research.tools.sandbox.common import SandboxUnavailable

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
