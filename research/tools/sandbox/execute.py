"""One sandboxed run from start to end: the inputs, the command, the supervisor, the returned files."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import io
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from pathlib import Path

from research.tools.sandbox.bwrap import _command
from research.tools.sandbox.cgroups import _Cgroup, _cgroup_support, limits_mode
from research.tools.sandbox.common import _HIDDEN_PREFIX, Limits, RunResult, SandboxUnavailable
from research.tools.sandbox.seccomp import _seccomp_program
from research.tools.sandbox.supervisor import _Supervisor

_BOOT_SOURCE = Path(__file__).with_name("boot.py")


def _sandbox_uid() -> int | None:
    """A throw-away uid for root; None when not root (bwrap maps our own uid)."""
    if os.geteuid() != 0:
        return None
    return 1_000_000 + secrets.randbelow(900_000)


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
