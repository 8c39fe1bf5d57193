"""run_python's whole-tree limits, hard-size tmpfs work dir and seccomp filter (issue 17).

Real bubblewrap and real processes. The memory and process limits are tested both ways they are
enforced: by a cgroup where this host lets us make one (root on cgroup v1 here) and by the host-side
watcher (forced with SANDBOX_LIMITS=watcher, what an unprivileged docker-compose worker gets).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from research.tools import sandbox
from research.tools.sandbox import Limits, SandboxUnavailable, run_python
from research.tools.sandbox import cgroups as sandbox_cgroups
from research.tools.sandbox import execute as sandbox_execute
from research.tools.sandbox import seccomp as sandbox_seccomp

pytestmark = pytest.mark.slow  # each test forks a sandbox up to its limits: make test runs them, test-fast does not

available, why = sandbox.sandbox_probe()
needs_sandbox = pytest.mark.skipif(not available, reason=f"sandbox unavailable here: {why}")
CGROUP_MODES = ("cgroup-v1", "cgroup-v2")


@pytest.fixture(autouse=True)
def _fresh_probe():
    yield
    sandbox.reset_probe()


def _cgroup_mode_here() -> str | None:
    support, _why = sandbox_cgroups._cgroup_support()
    return support.mode if support else None


@pytest.fixture(params=["cgroup", "watcher"])
def limits_mode(request, monkeypatch, settings):
    """Each whole-tree test runs once per mechanism; the cgroup run is skipped where none can be made."""
    if request.param == "cgroup" and _cgroup_mode_here() is None:
        pytest.skip(f"no writable cgroup here: {sandbox_cgroups._cgroup_support()[1]}")
    settings.SANDBOX_LIMITS = request.param
    return request.param


def _leftover_cgroups(prefix: str = "") -> list[str]:
    """This process's per-run cgroups still there (other processes on the host may have their own)."""
    support, _why = sandbox_cgroups._cgroup_support()
    if support is None:
        return []
    prefix = prefix or f"sandbox-{os.getpid()}-"
    return [name for parent in support.parents.values() for name in os.listdir(parent) if name.startswith(prefix)]


# Six forked children of 400 MB each: 2.4 GB in all, each well under the 1 GiB address-space limit per
# process, so only a limit on the whole tree stops them (issue 17: six children took 800 MB each).
SIX_CHILDREN = """
import os, time
for i in range(6):
    if os.fork() == 0:
        block = b"x" * (400 * 1024 * 1024)  # touched, so really resident
        print("child", i, "holds 400 MB", flush=True)
        time.sleep(120)
        os._exit(0)
for _ in range(6):
    os.wait()
print("ALL SIX SURVIVED", flush=True)
"""


@needs_sandbox
def test_six_forked_children_are_killed_as_a_tree(limits_mode):
    result = run_python(SIX_CHILDREN, timeout=120)
    expected = _cgroup_mode_here() if limits_mode == "cgroup" else "watcher"
    assert result.limits_mode == expected
    assert "ALL SIX SURVIVED" not in result.stdout
    assert not result.timed_out, result.stderr
    assert result.exit_code != 0
    assert f"the process tree used more than {Limits().whole_tree_memory_bytes} bytes of memory" in result.stderr
    if limits_mode == "cgroup":  # the kernel's limit: never all six (the watcher may overshoot by a tick)
        assert result.stdout.count("holds 400 MB") < 6, result.stdout
    assert _leftover_cgroups() == []


THREE_CHILDREN = """
import os, time
for i in range(3):
    if os.fork() == 0:
        block = b"x" * (MB * 1024 * 1024)
        time.sleep(HOLD)  # held, so a watcher sampling every 0.1 s sees it too
        os._exit(0)
for _ in range(3):
    os.wait()
print("three children fine")
"""


@needs_sandbox
def test_memory_limit_is_configurable_and_a_run_under_it_is_untouched(limits_mode):
    fine = run_python(THREE_CHILDREN.replace("MB", "60").replace("HOLD", "1"), timeout=60)
    assert fine.exit_code == 0 and fine.stdout == "three children fine\n", fine.stderr
    small = run_python(THREE_CHILDREN.replace("MB", "150").replace("HOLD", "60"), timeout=90,
                       limits=Limits(whole_tree_memory_bytes=256 * 1024**2))
    assert small.exit_code != 0 and not small.timed_out
    assert f"the process tree used more than {256 * 1024**2} bytes of memory" in small.stderr


FORK_LOOP = """
import os, time
n = 0
try:
    while True:
        pid = os.fork()
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        n += 1
        if n >= 200:
            break
except OSError as exc:
    print("fork refused after", n, exc.errno, flush=True)
print("forked", n, flush=True)
time.sleep(5)  # the children stay (they sleep on), so a watcher counting every 0.1 s sees them
"""


@needs_sandbox
def test_fork_loop_hits_the_whole_tree_process_limit(limits_mode):
    # The per-uid RLIMIT_NPROC (64) stays above the whole-tree limit of 24, so only the latter can stop it.
    limits = Limits(nproc=64, whole_tree_pids=24)
    result = run_python(FORK_LOOP, timeout=60, limits=limits)
    assert "forked 200" not in result.stdout
    if limits_mode == "cgroup":
        # The kernel refuses the fork (EAGAIN) once the cgroup holds 24 tasks, the sandbox's helpers included.
        refused = re.search(r"fork refused after (\d+) (\d+)", result.stdout)
        assert refused, result.stdout + result.stderr
        assert int(refused.group(1)) < 24 and int(refused.group(2)) == errno.EAGAIN
        assert "forks were refused at the limit of 24" in result.stderr
        assert result.exit_code == 0 and not result.timed_out  # the refusal, not a kill, stopped the loop
    else:
        # The watcher cannot refuse a fork; it kills the tree once it counts more than 24.
        assert not result.timed_out
        assert "the process tree had more than 24 processes and threads" in result.stderr


# Issue 25, B4: children filling socketpairs. Socket buffers belong to no process (no PSS, no RSS), so a
# watcher summing the tree's memory never saw them: 60 children queued 3 GiB against a 1.5 GiB limit and
# the run exited 0. Here 12 children try to queue 32 MB each (384 MB) against a limit of 128 MiB.
SOCKET_FILL = """
import os, socket, time
CHILDREN, TARGET = 12, 32 * 1024 * 1024
chunk = b"x" * 65536
r, w = os.pipe()
for i in range(CHILDREN):
    if os.fork() == 0:
        os.close(r)
        queued, pairs = 0, []
        try:
            while queued < TARGET:
                pair = socket.socketpair()
                pairs.append(pair)
                for end in pair:
                    end.setblocking(False)
                    try:
                        while True:
                            queued += end.send(chunk)
                    except BlockingIOError:
                        pass
        except OSError as exc:
            os.write(w, f"refused {exc.errno}\\n".encode())
        os.write(w, f"queued {queued}\\n".encode())
        time.sleep(3)  # hold the buffers while the others fill theirs
        os._exit(0)
os.close(w)
lines = b""
while chunk := os.read(r, 4096):
    lines += chunk
total = sum(int(line.split()[1]) for line in lines.decode().splitlines() if line.startswith("queued"))
refused = sorted({line for line in lines.decode().splitlines() if line.startswith("refused")})
print("QUEUED", total, *refused, flush=True)
"""


@needs_sandbox
def test_socket_buffers_cannot_pass_the_whole_tree_memory_limit(limits_mode):
    limit = 128 * 1024**2
    result = run_python(SOCKET_FILL, timeout=90, limits=Limits(whole_tree_memory_bytes=limit))
    queued = re.search(r"QUEUED (\d+)", result.stdout)
    # Never a clean exit with more queued than the limit allows.
    assert not (result.exit_code == 0 and queued and int(queued.group(1)) > limit), result.stdout + result.stderr
    assert not result.timed_out
    if limits_mode == "watcher":
        # No cgroup charges socket buffers to the tree, so the sandbox refuses sockets outright.
        assert result.stdout.strip() == f"QUEUED 0 refused {errno.EPERM}", result.stdout + result.stderr


@needs_sandbox
def test_work_dir_is_a_tmpfs_of_a_hard_size():
    """300 MB written to /sandbox (in 30 MB files, under the per-file limit) stops at the 128 MB cap with ENOSPC,
    inside the sandbox: nothing of it is written to the host's disk, nothing polls it."""
    code = """
import errno, os
st = os.statvfs("/sandbox")
print("size", st.f_blocks * st.f_frsize)
print("fs", [l.split()[0] for l in open("/proc/self/mounts") if l.split()[1] == "/sandbox"])
written = 0
try:
    for i in range(10):
        with open(f"part{i}.bin", "wb") as fh:
            for _ in range(30):
                fh.write(b"x" * 1024 * 1024)
                written += 1024 * 1024
except OSError as exc:
    print("stopped", errno.errorcode[exc.errno], "after", written, flush=True)
for name in os.listdir("."):
    if name.endswith(".bin"):
        os.remove(name)
open("after.txt", "w").write("the run goes on")
"""
    result = run_python(code, timeout=60)
    cap = Limits().workdir_bytes
    assert result.exit_code == 0, result.stderr
    assert f"size {cap}" in result.stdout
    assert "fs ['tmpfs']" in result.stdout
    stopped = re.search(r"stopped ENOSPC after (\d+)", result.stdout)
    assert stopped, result.stdout
    assert int(stopped.group(1)) <= cap
    assert result.files == {"after.txt": b"the run goes on"}


@needs_sandbox
def test_dev_shm_and_dev_are_no_way_around_the_caps():
    """/dev/shm is a tmpfs of its own hard size; the rest of /dev (the code's own tmpfs) is read-only."""
    code = """
import errno, glob, multiprocessing, os
written, outcome = 0, "ALL"
try:
    for i in range(10):  # 300 MB in 30 MB files: under the per-file limit, so only the tmpfs size stops it
        with open(f"/dev/shm/part{i}", "wb") as fh:
            for _ in range(30):
                fh.write(b"x" * 1024 * 1024)
                fh.flush()
                written += 1024 * 1024
except OSError as exc:
    outcome = errno.errorcode[exc.errno]
print("shm", outcome, written)
for path in ("/dev/evil", "/dev/pts/evil", "/dev/mqueue/evil"):
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError as exc:
        print("refused", path, errno.errorcode[exc.errno])
for path in glob.glob("/dev/shm/part*"):
    os.remove(path)
print("lock", multiprocessing.Lock())  # a POSIX semaphore lives in /dev/shm: it still works
"""
    result = run_python(code, timeout=60, limits=Limits(shm_bytes=16 * 1024**2))
    assert result.exit_code == 0, result.stderr
    assert "WROTE" not in result.stdout, result.stdout
    shm = re.search(r"shm (\w+) (\d+)", result.stdout)
    assert shm and shm.group(1) == "ENOSPC", result.stdout
    assert int(shm.group(2)) <= 16 * 1024**2
    assert result.stdout.count("refused") == 3
    assert "lock <Lock" in result.stdout


@needs_sandbox
def test_endless_empty_files_end_the_run():
    """Empty files cost kernel memory but no tmpfs pages: past workdir_inodes entries the sandbox ends."""
    code = "n = 0\nwhile True:\n    open(f'f{n}', 'w').close()\n    n += 1\n    if n % 5000 == 0:\n" \
           "        print(n, flush=True)"
    result = run_python(code, timeout=120, limits=Limits(workdir_inodes=20_000))
    assert not result.timed_out
    assert result.exit_code == 137
    assert "more than 20000 files and directories in /sandbox" in result.stderr
    assert "15000" in result.stdout.split() and result.files == {}


# Each call is made so that, without the filter, it would not answer EPERM where that can be arranged
# (unshare(0) and ptrace(TRACEME) succeed, setns(-1) is EBADF, userfaultfd(USER_MODE_ONLY) works, …).
SYSCALL_PROBE = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(NR[name], *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    if r >= 0 and name == "clone" and r == 0:
        os._exit(0)  # a child made by a clone that was let through
    print(name, "ok" if r >= 0 else errno.errorcode.get(e, e), flush=True)
call("unshare", 0)
call("unshare", 0x00020000)
call("setns", -1, 0)
call("mount", 0, 0, 0, 0, 0)
call("umount2", 0, 0)
call("pivot_root", 0, 0)
call("ptrace", 0, 0, 0, 0)
call("keyctl", 0, -3, 0)  # KEYCTL_GET_KEYRING_ID of the session keyring
call("add_key", 0, 0, 0, 0, 0)
call("request_key", 0, 0, 0, 0)
call("bpf", 0, 0, 0)
call("kexec_load", 0, 0, 0, 0)
call("open_by_handle_at", -1, 0, 0)
call("perf_event_open", 0, 0, -1, -1, 0)
call("userfaultfd", 1)  # UFFD_USER_MODE_ONLY
call("memfd_create", 0, 0)
call("shmget", 0, 4096, 0o1600)
call("process_vm_readv", os.getpid(), 0, 0, 0, 0, 0)
call("io_uring_setup", 1, 0)
call("clone", 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD
call("clone3", 0, 0)
status = open("/proc/self/status").read()
print("seccomp", status.split("Seccomp:")[1].split()[0])
"""
BLOCKED = ["unshare", "setns", "mount", "umount2", "pivot_root", "ptrace", "keyctl", "add_key", "request_key", "bpf",
           "kexec_load", "open_by_handle_at", "perf_event_open", "userfaultfd", "memfd_create", "shmget",
           "process_vm_readv", "io_uring_setup"]  # fmt: skip


def _syscall_numbers() -> dict[str, int]:
    import pyseccomp

    arch = pyseccomp.system_arch()
    return {name: pyseccomp.resolve_syscall(arch, name) for name in [*BLOCKED, "clone", "clone3"]}


def _probe_syscalls() -> dict[str, list[str]]:
    result = run_python(f"NR = {_syscall_numbers()!r}\n" + SYSCALL_PROBE, timeout=60)
    assert result.exit_code == 0, result.stderr
    answers: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        name, answer = line.split()
        answers.setdefault(name, []).append(answer)
    return answers


@needs_sandbox
def test_seccomp_refuses_each_blocked_syscall_with_eperm(monkeypatch):
    filtered = _probe_syscalls()
    assert filtered.pop("seccomp") == ["2"]  # SECCOMP_MODE_FILTER
    for name in BLOCKED:
        assert set(filtered[name]) == {"EPERM"}, (name, filtered[name])
    assert filtered["clone"] == ["EPERM"]  # a namespace flag
    assert filtered["clone3"] == ["ENOSYS"]  # so the C library falls back to clone()

    # The same calls under a filter that blocks nothing: most answer otherwise, so the filter is what refused.
    monkeypatch.setattr(sandbox_seccomp, "_blocked_syscalls", lambda: ())
    control = _probe_syscalls()
    differs = {name for name in BLOCKED if control[name] != filtered[name]}
    # Only pivot_root is refused by the kernel itself before it reads its arguments (and unshare(NEWNS)).
    assert set(BLOCKED) - {"pivot_root"} <= differs, control


@needs_sandbox
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86-64 machine code")
def test_32_bit_system_calls_are_no_way_around_the_filter():
    """The filter is for the native ABI; an i386 `int 0x80` call does not slip past it, it kills the process."""
    code = """
import ctypes, mmap
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(bytes([0xB8, 0x14, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20 (i386 getpid); int 0x80; ret
call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
print("before", flush=True)
print("AFTER", call(), flush=True)
"""
    result = run_python(code, timeout=30)
    assert result.stdout == "before\n"
    assert result.exit_code == 128 + 31  # SIGSYS


@needs_sandbox
def test_normal_work_still_runs_under_the_filter(limits_mode):
    """numpy, threads, subprocesses, multiprocessing and a matplotlib chart, all under every limit at once."""
    code = """
import multiprocessing, subprocess, threading
import numpy as np
import matplotlib.pyplot as plt
def square(x):
    return x * x
with multiprocessing.Pool(2) as pool:
    print("pool", sum(pool.map(square, range(10))))
t = threading.Thread(target=print, args=("thread ok",))
t.start(); t.join()
print(subprocess.run(["echo", "child ok"], capture_output=True, text=True).stdout.strip())
x = np.linspace(0, 1, 50)
plt.plot(x, x ** 2)
plt.savefig("chart.png", dpi=60)
print("saved")
"""
    result = run_python(code, timeout=90)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[:4] == ["pool 285", "thread ok", "child ok", "saved"]
    assert result.files["chart.png"].startswith(b"\x89PNG\r\n\x1a\n")
    assert result.limits_mode == (_cgroup_mode_here() if limits_mode == "cgroup" else "watcher")


@needs_sandbox
def test_files_come_back_only_from_a_run_that_ends_by_itself(limits_mode):
    """Files are streamed out by the bootstrap after the code exits (the tmpfs goes with the sandbox):
    os._exit and a crash keep them; a time-limit kill does not."""
    crashed = run_python("import os\nopen('partial.txt', 'w').write('kept')\nos.kill(os.getpid(), 9)", timeout=30)
    assert crashed.exit_code == 128 + 9
    assert crashed.files == {"partial.txt": b"kept"}
    exited = run_python("import os\nopen('a.txt', 'w').write('a')\nos._exit(4)", timeout=30)
    assert exited.exit_code == 4 and exited.files == {"a.txt": b"a"}
    killed = run_python("open('b.txt', 'w').write('b')\nwhile True:\n    pass", timeout=2)
    assert killed.timed_out and killed.files == {}


@needs_sandbox
def test_returned_files_respect_the_caps_and_names():
    code = """
import os
os.makedirs("sub/deeper", exist_ok=True)
open("sub/deeper/ok.txt", "w").write("deep")
open("big.bin", "wb").write(b"x" * 2048)
for i in range(5):
    open(f"n{i}.txt", "w").write(str(i))
os.makedirs(".hidden", exist_ok=True)
open(".hidden/secret.txt", "w").write("no")
os.mkfifo("fifo")
os.symlink("/proc/self/environ", "link.txt")
"""
    result = run_python(code, limits=Limits(return_file_bytes=1024, return_max_files=4))
    assert result.exit_code == 0, result.stderr
    assert "big.bin" not in result.files  # over the per-file cap
    assert len(result.files) == 4
    assert not any(name.startswith(".") or name in ("fifo", "link.txt") for name in result.files)


def test_forged_file_streams_are_read_safely():
    """The tar comes from inside the sandbox: absolute, '..', dot and link members and a cut stream are dropped."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name: str, data: bytes, kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.size = kind, link, len(data)
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
        add("/etc/evil", b"abs")
        add("../up.txt", b"up")
        add("a/../../up2.txt", b"up")
        add(".env", b"dot")
        add("sub/.git/config", b"dot")
        add("link", b"", tarfile.SYMTYPE, "/etc/passwd")
        add("hard", b"", tarfile.LNKTYPE, "good.txt")
        add("good.txt", b"good")
        add("same.csv", b"1,2")
        add("big.txt", b"x" * 5000)
    blob = buf.getvalue()
    limits = Limits(return_file_bytes=4096)
    assert sandbox_execute._parse_files(blob, {"same.csv": b"1,2"}, limits) == {"good.txt": b"good"}
    cut = blob[: blob.index(b"good") + 2]
    assert sandbox_execute._parse_files(cut, {}, limits) == {}
    assert sandbox_execute._parse_files(b"garbage" * 100, {}, limits) == {}


def test_unknown_limits_setting_fails_closed(settings, tmp_path):
    settings.SANDBOX_LIMITS = "none"
    flag = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="SANDBOX_LIMITS"):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()


def test_insisting_on_a_cgroup_where_none_can_be_made_fails_closed(settings, monkeypatch, tmp_path):
    settings.SANDBOX_LIMITS = "cgroup"
    monkeypatch.setattr(sandbox_cgroups, "_cgroup_detected", (None, "no writable cgroup (test)"))
    flag = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="no writable cgroup"):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()


def test_fails_closed_without_libseccomp(monkeypatch, tmp_path):
    """No pyseccomp / libseccomp2: the probe says why and nothing runs."""
    import builtins

    real_import = builtins.__import__

    def no_seccomp(name, *args, **kwargs):
        if name == "pyseccomp":
            raise RuntimeError("Unable to find libseccomp")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_seccomp)
    monkeypatch.setattr(sandbox_seccomp, "_seccomp_cache", {})
    sandbox.reset_probe()
    flag = tmp_path / "ran"
    ok, reason = sandbox.sandbox_probe()
    assert not ok and "seccomp" in reason
    with pytest.raises(SandboxUnavailable, match="seccomp"):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()


def test_cgroups_of_a_dead_worker_are_removed(monkeypatch):
    """A worker SIGKILLed mid-run leaves its (empty) per-run cgroups; the next detection removes them."""
    support, _why = sandbox_cgroups._cgroup_support()
    if support is None:
        pytest.skip("no writable cgroup here")
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is free now
    names = [f"sandbox-{dead.pid}-deadbeef"]
    for parent in support.parents.values():
        os.mkdir(os.path.join(parent, names[0]))
    monkeypatch.setattr(sandbox_cgroups, "_cgroup_detected", None)
    assert sandbox.limits_mode() == support.mode
    assert _leftover_cgroups(names[0]) == []


def test_limits_mode_is_reported(settings):
    settings.SANDBOX_LIMITS = "watcher"
    assert sandbox.limits_mode() == "watcher"
    settings.SANDBOX_LIMITS = "auto"
    assert sandbox.limits_mode() in (*CGROUP_MODES, "watcher")


NON_ROOT_DRIVER = """
import json, os
from research.tools import sandbox
six = '''
import os, time
for i in range(6):
    if os.fork() == 0:
        block = b"x" * (400 * 1024 * 1024)
        time.sleep(60)
        os._exit(0)
for _ in range(6):
    os.wait()
print("ALL SIX SURVIVED")
'''
out = {"uid": os.geteuid(), "probe": sandbox.sandbox_probe(), "mode": sandbox.limits_mode()}
r = sandbox.run_python("import os; print(os.getuid(), open('in.txt').read()); open('o.txt', 'w').write('o')",
                       {"in.txt": b"hi"})
out["basic"] = [r.stdout, r.exit_code, {k: v.decode() for k, v in r.files.items()}, r.limits_mode]
r = sandbox.run_python(six, timeout=120)
out["six"] = [r.stdout, r.stderr[-300:], r.exit_code]
r = sandbox.run_python("import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.unshare(0), ctypes.get_errno())")
out["unshare"] = r.stdout
r = sandbox.run_python("open('big', 'wb').write(b'x' * (30 * 1024 * 1024))",
                       limits=sandbox.Limits(workdir_bytes=1 << 20))
out["enospc"] = r.stderr[-200:]
print(json.dumps(out))
"""


def test_unprivileged_worker_path():
    """What a docker-compose worker (uid 10001, no writable cgroup) gets: one bwrap with its own user namespace,
    the watcher, seccomp and the tmpfs. Run here as `nobody` with the system python, from a copy of the module."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs root (to become nobody), setpriv and /usr/bin/python3")
    with tempfile.TemporaryDirectory(prefix="sandbox-nonroot-", dir="/tmp") as tmp:  # pytest's tmp_path: 0700 parents
        _run_as_nobody(Path(tmp))


def _run_as_nobody(tmp_path: Path) -> None:
    import psutil
    import pyseccomp

    pkg = tmp_path / "research" / "tools"
    pkg.mkdir(parents=True)
    for init in (tmp_path / "research" / "__init__.py", pkg / "__init__.py"):
        init.write_text("")
    src = os.path.dirname(sandbox.__file__)
    shutil.copytree(src, pkg / "sandbox", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(os.path.dirname(src), "config.py"), pkg / "config.py")
    shutil.copy(pyseccomp.__file__, tmp_path / "pyseccomp.py")
    # The watcher reads the tree with psutil, which the system python lacks: the venv's copy (abi3) serves.
    shutil.copytree(os.path.dirname(psutil.__file__), tmp_path / "psutil", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "drive.py").write_text(NON_ROOT_DRIVER)
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    check = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bwrap", "--unshare-user",
                            "--ro-bind", "/", "/", "true"], capture_output=True, text=True)  # fmt: skip
    if check.returncode != 0:
        pytest.skip(f"no unprivileged user namespaces here: {check.stderr.strip()}")
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", str(tmp_path / "drive.py")],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}, cwd=tmp_path, capture_output=True, text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["uid"] == 65534
    assert out["probe"] == [True, "ok"] and out["mode"] == "watcher"
    assert out["basic"] == ["65534 hi\n", 0, {"o.txt": "o"}, "watcher"]
    assert "ALL SIX SURVIVED" not in out["six"][0] and "bytes of memory" in out["six"][1] and out["six"][2] != 0
    assert out["unshare"] == "-1 1\n"  # EPERM from the filter
    assert "No space left on device" in out["enospc"]


def test_production_refuses_the_watcher_unless_the_operator_opts_in(settings, tmp_path):
    """Weaker whole-tree limits (the watcher) run no code in production without SANDBOX_ALLOW_WEAK_LIMITS."""
    settings.SANDBOX_LIMITS = "watcher"  # what a worker without a delegated cgroup gets
    settings.SANDBOX_ALLOW_WEAK_LIMITS = False
    flag = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="SANDBOX_ALLOW_WEAK_LIMITS=1"):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()
    if available:
        settings.SANDBOX_ALLOW_WEAK_LIMITS = True
        assert run_python("print('ran')").stdout == "ran\n"


def test_the_production_default_is_no_weak_limits(monkeypatch):
    """The setting's default follows SECURE_PRODUCTION; outside Django the environment decides the same way."""
    env = {k: v for k, v in os.environ.items() if k not in ("SANDBOX_ALLOW_WEAK_LIMITS", "SECURE_PRODUCTION")}
    code = "from django.conf import settings; print(settings.SANDBOX_ALLOW_WEAK_LIMITS)"
    for production, expected in (("1", "False"), ("0", "True")):
        out = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"],
                             env={**env, "SECURE_PRODUCTION": production, "SECRET_KEY": "k" * 50,
                                  "DJANGO_SETTINGS_MODULE": "research.settings"},
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == expected, out.stderr
    monkeypatch.delenv("SANDBOX_ALLOW_WEAK_LIMITS", raising=False)
    monkeypatch.setenv("SECURE_PRODUCTION", "1")
    monkeypatch.setattr(sandbox_cgroups, "setting", lambda name, default: default)  # as without Django
    assert sandbox_cgroups._weak_limits_allowed() is False
    monkeypatch.setenv("SANDBOX_ALLOW_WEAK_LIMITS", "1")
    assert sandbox_cgroups._weak_limits_allowed() is True


@pytest.mark.django_db
def test_the_coder_step_reports_why_no_code_ran(settings, alice, monkeypatch):
    from research.jobs import dispatch, services
    from research.jobs.models import JobEvent
    from research.jobs.units.context import JobContext

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    settings.SANDBOX_LIMITS = "watcher"
    settings.SANDBOX_ALLOW_WEAK_LIMITS = False
    job = services.job_create(user=alice, question="Compute something?", options={"engine": "offline"})
    run = JobContext(job, step_id="s1").run_python("print(1)")
    assert run.exit_code == -1 and run.stdout == ""
    assert "not run" in run.error and "SANDBOX_ALLOW_WEAK_LIMITS" in run.error
    refused = JobEvent.objects.filter(job=job, type="step.activity", payload__kind="code_refused").get()
    assert "cgroup" in refused.payload["error"]


def test_a_delegated_parent_that_cannot_be_used_fails_closed(settings, monkeypatch, tmp_path):
    """SANDBOX_CGROUP_PARENT names the compose worker's delegated cgroup; where it is not one, nothing runs."""
    settings.SANDBOX_LIMITS = "cgroup"
    settings.SANDBOX_CGROUP_PARENT = str(tmp_path / "not-a-cgroup")
    monkeypatch.setattr(sandbox_cgroups, "_cgroup_detected", None)
    flag = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="SANDBOX_CGROUP_PARENT"):
        run_python(f"open({str(flag)!r}, 'w').write('ran')")
    assert not flag.exists()
    monkeypatch.setattr(sandbox_cgroups, "_cgroup_detected", None)
    settings.SANDBOX_LIMITS = "auto"
    assert sandbox.limits_mode() == "watcher"  # development: the watcher, which refuses sockets
    monkeypatch.setattr(sandbox_cgroups, "_cgroup_detected", None)
