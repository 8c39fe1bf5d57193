"""Run untrusted Python (the coder step's code) in a bubblewrap sandbox.

Isolation (docs/architecture.md, "Tools"): a separate process tree in new PID / network / IPC / UTS
namespaces, an empty environment, a root file system that holds only /usr, the
interpreter and the virtualenv's libraries (read-only) plus one private,
writable working directory, and rlimits on CPU, memory, processes, file size
and open files. Output and returned files are capped. The whole tree is killed
on timeout.

It fails closed: if bubblewrap is missing or cannot create namespaces, the
code is never run and `SandboxUnavailable` says why.

When the app runs as root, the sandboxed code is dropped to a throw-away uid
(setpriv, no capabilities, no_new_privs): the kernel never applies
RLIMIT_NPROC to uid 0, so a fork bomb would otherwise be uncontained. As any
other user bubblewrap makes its own user namespace, where RLIMIT_NPROC counts
only the sandbox's processes.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from research.tools.config import setting

WORKDIR = "/sandbox"  # the code's cwd and HOME inside the sandbox
CODE_PATH = "/code/main.py"
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


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 1024 * 1024 * 1024  # RLIMIT_AS; matplotlib + numpy fit in this
    nproc: int = 64  # processes and threads
    file_bytes: int = 32 * 1024 * 1024  # RLIMIT_FSIZE, per file
    nofile: int = 256
    output_bytes: int = 1024 * 1024  # per stream
    workdir_bytes: int = 128 * 1024 * 1024  # whole working dir, watched while running
    return_file_bytes: int = 10 * 1024 * 1024  # one returned file
    return_total_bytes: int = 25 * 1024 * 1024
    return_max_files: int = 50




def _find_executable(name: str) -> str | None:
    """Locate a helper binary (a seam for tests that simulate a missing bwrap)."""
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin")


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
        args.append("--unshare-user")
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    # Font configuration only (matplotlib/fontconfig read it); nothing else of /etc.
    if os.path.isdir("/etc/fonts"):
        args += ["--perms", "0755", "--dir", "/etc", "--ro-bind", "/etc/fonts", "/etc/fonts"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    return args


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
    ]


def _command(bwrap: str, workdir: str, code_file: str, uid: int | None, limits: Limits, cpu_s: int) -> list[str]:
    as_root = uid is not None
    py_args, python = _python_binds()
    cmd = [bwrap, *_base_args(as_root), *py_args]
    cmd += ["--bind", workdir, WORKDIR, "--perms", "0755", "--dir", "/code", "--ro-bind", code_file, CODE_PATH]
    cmd += ["--chdir", WORKDIR, *_env_args(python)]
    cmd += _drop_privileges_args(uid) if uid is not None else ["--"]
    # -E: ignore PYTHON* variables, -s: no user site, -u: unbuffered so output
    # written before a kill is not lost.
    return cmd + _limit_args(limits, cpu_s) + [python, "-E", "-s", "-u", CODE_PATH]


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
        result = _execute(bwrap, "import sys; print('sandbox-ok')", {}, 20.0, Limits(), probing=True)
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

    Files it writes in the cwd (not dot-files) come back in `RunResult.files`.
    Raises SandboxUnavailable, without running anything, when isolation is missing.
    """
    chosen = (backend or setting("SANDBOX_BACKEND", None) or os.environ.get("SANDBOX_BACKEND") or "bwrap").lower()
    if chosen != "bwrap":
        # Only bubblewrap isolates the file system here; anything else would
        # run the code with less isolation than documented, so refuse.
        raise SandboxUnavailable(f"unsupported sandbox backend {chosen!r} (only 'bwrap' is implemented)")
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


def _execute(
    bwrap: str, code: str, files: dict[str, bytes], timeout: float, limits: Limits, *, probing: bool = False
) -> RunResult:
    base = tempfile.mkdtemp(prefix="sandbox-")
    try:
        uid = _sandbox_uid()
        workdir = os.path.join(base, "work")
        os.mkdir(workdir, 0o700)
        for sub in (".tmp", ".matplotlib"):
            os.mkdir(os.path.join(workdir, sub), 0o700)
        if not probing:
            for cached in _matplotlib_cache_files():
                shutil.copyfile(cached, os.path.join(workdir, ".matplotlib", os.path.basename(cached)))
        for name, data in files.items():
            target = os.path.join(workdir, _safe_relpath(name))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(data)
        if uid is not None:
            for root, dirs, fnames in os.walk(workdir):
                for n in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in fnames)]:
                    os.chown(n, uid, uid, follow_symlinks=False)
        code_file = os.path.join(base, "main.py")
        with open(code_file, "w", encoding="utf-8") as fh:
            fh.write(code)
        os.chmod(code_file, 0o644)

        cpu_s = max(1, int(timeout) + 1)
        cmd = _command(bwrap, workdir, code_file, uid, limits, cpu_s)
        stdout, stderr, rc, timed_out = _supervise(cmd, timeout, limits, workdir)
        if not probing and rc != 0 and not stdout and stderr.startswith("bwrap:"):
            # bwrap itself failed to build the sandbox: nothing ran.
            raise SandboxUnavailable(stderr.strip()[:500])
        out_files = {} if probing else _collect_files(workdir, files, limits)
        return RunResult(stdout=stdout, stderr=stderr, exit_code=rc, files=out_files, timed_out=timed_out)
    finally:
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


def _dir_size(path: str, cap: int) -> int:
    total = 0
    for root, _dirs, fnames in os.walk(path):
        for f in fnames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            if total > cap:
                return total
    return total


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # bwrap leads its own process group (start_new_session). Killing it makes
    # the sandbox's PID 1 die (--die-with-parent), which tears down every
    # process in the PID namespace, including ones that called setsid().
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _supervise(cmd: list[str], timeout: float, limits: Limits, workdir: str) -> tuple[str, str, int, bool]:
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    out, err = _Capped(limits.output_bytes), _Capped(limits.output_bytes)
    timed_out = False
    note = ""
    deadline = time.monotonic() + timeout
    next_disk_check = time.monotonic() + 0.5
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        open_streams = 2
        while open_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                _kill_group(proc)
                break
            for key, _ in sel.select(timeout=min(remaining, 0.25)):
                chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if chunk:
                    key.data.add(chunk)
                else:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
            if time.monotonic() >= next_disk_check:
                next_disk_check = time.monotonic() + 0.5
                if _dir_size(workdir, limits.workdir_bytes) > limits.workdir_bytes:
                    note = f"\n[sandbox: killed, working directory exceeded {limits.workdir_bytes} bytes]\n"
                    _kill_group(proc)
                    break
        try:
            rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not timed_out else 5)
        except subprocess.TimeoutExpired:
            # Streams closed but bwrap lingers (e.g. a daemonized child kept it alive).
            timed_out = True
            _kill_group(proc)
            rc = proc.wait(timeout=5)
    finally:
        sel.close()
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait(timeout=5)
        else:
            _kill_group(proc)  # harmless if the group is gone already
        proc.stdout.close()
        proc.stderr.close()
    stderr = err.text()
    if timed_out:
        stderr += f"\n[sandbox: killed after the {timeout:g} s time limit]\n"
    return out.text(), stderr + note, rc, timed_out


def _collect_files(workdir: str, inputs: dict[str, bytes], limits: Limits) -> dict[str, bytes]:
    """New or changed regular files under the work dir, never following links."""
    result: dict[str, bytes] = {}
    total = 0
    for root, dirs, fnames in os.walk(workdir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(_HIDDEN_PREFIX))
        for fname in sorted(fnames):
            if fname.startswith(_HIDDEN_PREFIX):
                continue
            full = os.path.join(root, fname)
            rel = os.path.relpath(full, workdir)
            try:
                # O_NOFOLLOW + fstat: the sandbox could plant a symlink to a
                # host file we (maybe root) can read.
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > limits.return_file_bytes:
                    continue
                if total + st.st_size > limits.return_total_bytes or len(result) >= limits.return_max_files:
                    return result
                data = fh.read(limits.return_file_bytes + 1)
            if len(data) > limits.return_file_bytes or inputs.get(rel) == data:
                continue
            result[rel] = data
            total += len(data)
    return result

