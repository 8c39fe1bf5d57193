"""The bubblewrap command line: binds, namespaces, environment, rlimits, the dropped uid, the cgroup entry."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from research.tools.sandbox import common
from research.tools.sandbox.cgroups import _Cgroup
from research.tools.sandbox.common import BOOT_PATH, CODE_PATH, INPUT_DIR, WORKDIR, Limits


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
    prlimit = common._find_executable("prlimit") or "/usr/bin/prlimit"
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
    setpriv = common._find_executable("setpriv") or "/usr/bin/setpriv"
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
        common._find_executable("bwrap") or "/usr/bin/bwrap",
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
        sh = common._find_executable("sh") or "/bin/sh"
        cmd = [sh, "-c", _CGROUP_ENTER, "sh", *cgroup.procs_files, "--", *cmd]
    return cmd
