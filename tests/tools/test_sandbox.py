"""run_python: isolation, limits, cleanup, returned files, and failing closed."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

import research
from research.tools import sandbox
from research.tools.sandbox import TRUNCATION_MARKER, Limits, RunResult, SandboxUnavailable, run_python
from research.tools.sandbox import common as sandbox_common

PROJECT = Path(research.__file__).resolve().parent.parent

available, why = sandbox.sandbox_probe()
needs_sandbox = pytest.mark.skipif(not available, reason=f"sandbox unavailable here: {why}")


@pytest.fixture(autouse=True)
def _fresh_probe():
    yield
    sandbox.reset_probe()  # a test that faked a missing bwrap must not poison the cache


def _processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


def _wait_gone(marker: str, seconds: float = 3.0) -> list[int]:
    end = time.monotonic() + seconds
    while (left := _processes_with(marker)) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def _marker() -> str:
    # A unique argument for `sleep`, so only this test's processes match.
    return f"{1000 + uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**6}"


@needs_sandbox
def test_runs_code_with_input_files():
    result = run_python("print(open('data.csv').read().upper())\nimport sys; sys.exit(3)", {"data.csv": b"a,b\n1,2\n"})
    assert isinstance(result, RunResult)
    assert result.stdout == "A,B\n1,2\n\n"
    assert result.exit_code == 3
    assert not result.timed_out
    assert result.files == {}  # unchanged inputs are not returned


@needs_sandbox
def test_no_network(test_site):
    port = test_site.url.rsplit(":", 1)[1]
    code = f"""
import socket
for host, port in [("127.0.0.1", {port}), ("1.1.1.1", 80), ("8.8.8.8", 53)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("CONNECTED", host)
    except OSError as exc:
        print("blocked", host, type(exc).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    print("RESOLVED")
except OSError:
    print("no dns")
"""
    result = run_python(code, timeout=15)
    assert "CONNECTED" not in result.stdout and "RESOLVED" not in result.stdout
    assert result.stdout.count("blocked") == 3  # even the host's own loopback services are unreachable


@needs_sandbox
def test_environment_is_empty(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "sk-very-secret-123")
    code = """
import os
print(" ".join(sorted(os.environ)))
print("sk-very-secret" in repr(dict(os.environ)))
import glob
leak = False
for path in glob.glob("/proc/*/environ"):
    try:
        leak |= b"sk-very-secret" in open(path, "rb").read()
    except OSError:
        pass
print("leak", leak)
"""
    result = run_python(code)
    assert result.exit_code == 0, result.stderr
    names = result.stdout.splitlines()[0].split()
    assert "SECRET_TOKEN" not in names
    assert set(names) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR", "PWD",
                          "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}  # fmt: skip
    assert result.stdout.splitlines()[1:] == ["False", "leak False"]


@needs_sandbox
def test_project_files_are_invisible():
    targets = [PROJECT / "research" / "settings.py", PROJECT / "manage.py", PROJECT / "research" / "__init__.py"]
    code = f"""
import os
for path in {[str(t) for t in targets]!r}:
    try:
        open(path).read()
        print("READ", path)
    except OSError as exc:
        print("denied", type(exc).__name__)
try:
    print("listing", sorted(os.listdir({str(PROJECT)!r})))
except OSError:
    print("listing none")
"""
    result = run_python(code)
    assert "READ" not in result.stdout
    assert result.stdout.count("denied") == 3
    listing = result.stdout.splitlines()[-1]
    assert "research" not in listing and "manage.py" not in listing


@needs_sandbox
def test_only_workdir_is_writable():
    code = """
import os
for path in ["/usr/evil", "/evil", "/tmp/evil", "/etc/evil", "/proc/evil"]:
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError:
        print("refused")
open("ok.txt", "w").write("fine")
print(os.getcwd())
"""
    result = run_python(code)
    assert "WROTE" not in result.stdout
    assert result.stdout.count("refused") == 5
    assert result.files == {"ok.txt": b"fine"}


@needs_sandbox
def test_infinite_loop_times_out():
    started = time.monotonic()
    result = run_python("print('start', flush=True)\nwhile True:\n    pass", timeout=1.5)
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert result.exit_code != 0
    assert result.stdout == "start\n"  # output before the kill is kept
    assert "time limit" in result.stderr
    assert elapsed < 6


@needs_sandbox
def test_timeout_default_comes_from_settings(settings):
    settings.SANDBOX_TIMEOUT_S = 1
    started = time.monotonic()
    result = run_python("import time\ntime.sleep(30)")
    assert result.timed_out and time.monotonic() - started < 5


@needs_sandbox
@pytest.mark.parametrize(
    "code",
    [
        "x = bytearray(8 * 1024**3)",  # one huge allocation
        "import numpy\nx = numpy.ones((40000, 40000))",  # 12.8 GB array
        "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024**2))",  # growing
    ],
)
def test_memory_bomb_fails_inside(code):
    started = time.monotonic()
    result = run_python(code, timeout=20, limits=Limits(memory_bytes=512 * 1024**2))
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr
    assert not result.timed_out
    assert time.monotonic() - started < 15


@needs_sandbox
def test_fork_bomb_is_contained():
    marker = _marker()
    code = f"""
import os, subprocess
subprocess.Popen(["sleep", "{marker}"])
n = 0
try:
    while True:
        if os.fork() == 0:
            import time
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as exc:
    print("fork refused after", n, type(exc).__name__, flush=True)
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
    result = run_python(code, timeout=3)
    first = result.stdout.splitlines()[0]
    assert first.startswith("fork refused after")
    assert int(first.split()[3]) < Limits().nproc
    assert result.timed_out
    assert _wait_gone(marker) == []


@needs_sandbox
def test_no_processes_left_behind():
    marker = _marker()
    code = f"""
import os, subprocess
# A daemon: double fork + new session, detached from everything.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/usr/bin/sleep", ["sleep", "{marker}"])
    os._exit(0)
subprocess.Popen(["sleep", "{marker}"], start_new_session=True, stdout=subprocess.DEVNULL)
print("spawned")
"""
    result = run_python(code, timeout=10)
    assert result.stdout == "spawned\n"
    assert not result.timed_out
    assert _wait_gone(marker) == []

    timed = run_python(code + "\nimport time\ntime.sleep(60)\n", timeout=1.5)
    assert timed.timed_out
    assert _wait_gone(marker) == []


@needs_sandbox
def test_output_flood_is_truncated():
    limits = Limits(output_bytes=100_000)
    result = run_python(
        "import sys\nfor i in range(200000):\n    sys.stdout.write('x' * 99 + '\\n')\nsys.stderr.write('e' * 500000)",
        limits=limits,
        timeout=20,
    )
    assert result.exit_code == 0
    assert result.stdout.endswith(TRUNCATION_MARKER)
    assert len(result.stdout) == 100_000 + len(TRUNCATION_MARKER)
    assert result.stderr.endswith(TRUNCATION_MARKER)


@needs_sandbox
def test_file_size_limit():
    result = run_python("open('big.bin', 'wb').write(b'0' * (8 * 1024**2))", limits=Limits(file_bytes=1024**2))
    assert result.exit_code != 0
    assert "File too large" in result.stderr
    assert "big.bin" not in result.files or len(result.files["big.bin"]) <= 1024**2


@needs_sandbox
def test_matplotlib_chart_comes_back():
    code = """
import matplotlib.pyplot as plt
import numpy as np
years = np.arange(2010, 2024)
plt.plot(years, 0.42 * 0.84 ** (years - 2010))
plt.title("Solar LCOE")
plt.savefig("lcoe.png", dpi=80)
import os
os.makedirs("charts", exist_ok=True)
plt.savefig("charts/again.png", dpi=40)
print("done")
"""
    result = run_python(code, timeout=60)
    assert result.exit_code == 0, result.stderr
    assert set(result.files) == {"lcoe.png", os.path.join("charts", "again.png")}
    assert result.files["lcoe.png"].startswith(b"\x89PNG\r\n\x1a\n")
    assert not any(name.startswith(".") for name in result.files)  # matplotlib's cache stays out


@needs_sandbox
def test_symlinks_out_of_the_workdir_are_not_returned():
    code = """
import os
os.symlink("/etc/passwd", "passwd.txt")
os.symlink("/proc/self/environ", "env.txt")
open("real.txt", "w").write("real")
"""
    result = run_python(code)
    assert result.files == {"real.txt": b"real"}


def test_bad_input_file_names_are_rejected():
    if not available:
        pytest.skip(f"sandbox unavailable here: {why}")
    for name in ["../escape.txt", "/etc/passwd", "a/../../b", ""]:
        with pytest.raises(ValueError, match="invalid sandbox file name"):
            run_python("print(1)", {name: b"x"})


def test_fails_closed_without_bwrap(monkeypatch, tmp_path):
    flag = tmp_path / "ran"
    real = sandbox_common._find_executable
    monkeypatch.setattr(sandbox_common, "_find_executable", lambda name: None if name == "bwrap" else real(name))
    sandbox.reset_probe()
    with pytest.raises(SandboxUnavailable, match="bwrap") as err:
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert "not installed" in err.value.reason
    assert not flag.exists()


def test_fails_closed_when_namespaces_are_refused(monkeypatch, tmp_path):
    """bwrap exists but cannot build the sandbox (e.g. user namespaces disabled)."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    flag = tmp_path / "ran"
    real = sandbox_common._find_executable
    monkeypatch.setattr(sandbox_common, "_find_executable", lambda name: str(fake) if name == "bwrap" else real(name))
    sandbox.reset_probe()
    with pytest.raises(SandboxUnavailable, match="namespace"):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()


def test_unknown_backend_is_refused(settings):
    settings.SANDBOX_BACKEND = "none"
    with pytest.raises(SandboxUnavailable, match="unsupported sandbox backend"):
        run_python("print(1)")


@needs_sandbox
def test_no_user_namespaces_inside():
    """unshare(CLONE_NEWUSER) inside the sandbox fails, so the code cannot gain capabilities in a namespace
    of its own and mount a tmpfs no limit counts (issue 17: it mounted one and wrote 2 GB to RAM)."""
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, flag in (("user", 0x10000000), ("user+mount", 0x10000000 | 0x00020000), ("mount", 0x00020000)):
    r = libc.unshare(flag)
    print(name, "refused" if r else "ALLOWED", os.strerror(ctypes.get_errno()) if r else "")
print("mount-call", libc.mount(b"none", b"/sandbox", b"tmpfs", 0, None))
"""
    result = run_python(code, timeout=20)
    assert result.exit_code == 0, result.stderr
    assert "ALLOWED" not in result.stdout, result.stdout
    assert result.stdout.count("refused") == 3 and "mount-call -1" in result.stdout, result.stdout


def test_fails_closed_with_a_bwrap_that_cannot_disable_user_namespaces(monkeypatch, tmp_path):
    """A bubblewrap older than 0.8 (no --disable-userns) is refused, not run without the block."""
    real_bwrap = sandbox_common._find_executable("bwrap")
    if real_bwrap is None:
        pytest.skip("bwrap is not installed")
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = --disable-userns ] && '
                    '{ echo "bwrap: Unknown option --disable-userns" >&2; exit 1; }; done\n'
                    f'exec {real_bwrap} "$@"\n')
    fake.chmod(0o755)
    flag = tmp_path / "ran"
    real = sandbox_common._find_executable
    monkeypatch.setattr(sandbox_common, "_find_executable", lambda name: str(fake) if name == "bwrap" else real(name))
    sandbox.reset_probe()
    with pytest.raises(SandboxUnavailable):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()
