"""The trusted first process inside the Python sandbox (research.tools.sandbox).

It runs as the sandbox's own uid, but before and after the untrusted code and in
a separate process from it: it copies the input files into the tmpfs work dir,
runs main.py under the rlimits (through prlimit), waits for it, then streams the
files the code left in the work dir to the host as a tar over a pipe whose file
descriptor the code never gets. The host parses that tar with its own caps, so a
forged or broken stream can only lose files, never reach the host's disk.

Standard library only: it runs with `python -I -S`, before any site-packages, and imports
little (tarfile alone takes ~25 ms, so only when there are files to send).
"""

from __future__ import annotations

import os
import sys

WORKDIR = "/sandbox"
INPUT = "/input"
_HIDDEN = "."


def _not_dumpable() -> None:
    # The code runs as the same uid: without this it could open /proc/<us>/mem or /proc/<us>/fd.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def _copy_inputs() -> bool:
    """The host's input files (regular files and dirs only) into the tmpfs; they count against its size."""
    try:
        for root, dirs, names in os.walk(INPUT):
            target = os.path.join(WORKDIR, os.path.relpath(root, INPUT))
            for d in dirs:
                os.makedirs(os.path.join(target, d), mode=0o700, exist_ok=True)
            for name in names:
                with open(os.path.join(root, name), "rb") as src, open(os.path.join(target, name), "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
        for sub in (".tmp", ".matplotlib"):
            os.makedirs(os.path.join(WORKDIR, sub), mode=0o700, exist_ok=True)
    except OSError as exc:
        sys.stderr.write(f"\n[sandbox: the input files do not fit in the working directory: {exc}]\n")
        return False
    return True


def _spawn(command: list[str]) -> int:
    """Start the code; it inherits stdin/stdout/stderr only, never the output pipe or the seccomp program."""
    for entry in os.listdir("/proc/self/fd"):
        fd = int(entry)
        if fd > 2:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass  # the listing's own descriptor, closed by now
    return os.posix_spawn(command[0], command, dict(os.environ))


def _files_to_return(file_cap: int, total_cap: int, max_files: int) -> list[tuple[str, bytes]]:
    """Regular, non-dot files under the work dir, within the caps; links are never followed."""
    import stat

    found: list[tuple[str, bytes]] = []
    total = 0
    for root, dirs, names in os.walk(WORKDIR, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(_HIDDEN))
        for name in sorted(names):
            if name.startswith(_HIDDEN):
                continue
            full = os.path.join(root, name)
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    continue
                data = fh.read(file_cap + 1)  # read first: the size may change while we look
            if len(data) > file_cap:
                continue
            if len(found) >= max_files or total + len(data) > total_cap:
                return found
            found.append((os.path.relpath(full, WORKDIR), data))
            total += len(data)
    return found


def _stream_files(out_fd: int, files: list[tuple[str, bytes]]) -> None:
    """The files as a tar on the output pipe (nothing at all when there are none: no tarfile import)."""
    with os.fdopen(out_fd, "wb") as raw:
        if not files:
            return
        import io
        import tarfile

        with tarfile.open(fileobj=raw, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for name, data in files:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))


def _wait(pid: int, max_inodes: int) -> int:
    """Wait for the code; end the whole sandbox if /sandbox or /dev/shm holds more than max_inodes entries.

    A tmpfs's size counts pages only: empty files and dirs cost kernel memory it does not see. Our exit
    ends bwrap's PID 1, and with it every process in the sandbox.
    """
    import select

    pidfd = os.pidfd_open(pid)
    while not select.select([pidfd], [], [], 0.1)[0]:
        for path in (WORKDIR, "/dev/shm"):
            st = os.statvfs(path)
            if st.f_files - st.f_ffree > max_inodes:
                sys.stderr.write(f"\n[sandbox: killed, more than {max_inodes} files and directories in {path}]\n")
                sys.stderr.flush()
                os._exit(137)
    rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return 128 - rc if rc < 0 else rc  # killed by a signal: the shell's convention, as bwrap reports it


def main(argv: list[str]) -> int:
    """argv: out_fd file_cap total_cap max_files max_inodes -- prlimit … python … main.py"""
    out_fd, file_cap, total_cap, max_files, max_inodes = (int(a) for a in argv[:5])
    command = argv[argv.index("--") + 1 :]
    _not_dumpable()
    rc = 1
    if _copy_inputs():
        try:
            pid = _spawn(command)
        except OSError as exc:
            sys.stderr.write(f"\n[sandbox: cannot start the code: {exc}]\n")
        else:
            rc = _wait(pid, max_inodes)
    try:
        _stream_files(out_fd, _files_to_return(file_cap, total_cap, max_files))
    except OSError as exc:
        sys.stderr.write(f"\n[sandbox: could not return the files: {exc}]\n")
    return rc


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
