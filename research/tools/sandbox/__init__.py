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

Inside, a trusted bootstrap (research/tools/sandbox/boot.py) copies the input
files into the tmpfs, runs the code, and streams the files it wrote back to the
host as a tar over a pipe: the tmpfs disappears with the sandbox.

One module per concern: `common` (the contract types), `seccomp`, `cgroups` (and the limits policy),
`watcher`, `bwrap` (the command line), `supervisor`, `execute` (one run), `probe`, `boot` (the script run
inside, as a file: never imported). `run_python` below is the contract.
"""

from __future__ import annotations

import os

from research.tools.config import setting
from research.tools.sandbox import common
from research.tools.sandbox.cgroups import limits_mode
from research.tools.sandbox.common import DEFAULT_TIMEOUT_S, TRUNCATION_MARKER, Limits, RunResult, SandboxUnavailable
from research.tools.sandbox.execute import _execute
from research.tools.sandbox.probe import reset_probe, sandbox_probe

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "TRUNCATION_MARKER",
    "Limits",
    "RunResult",
    "SandboxUnavailable",
    "limits_mode",
    "reset_probe",
    "run_python",
    "sandbox_probe",
]


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
    bwrap = common._find_executable("bwrap")
    if not bwrap:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
    if timeout is None:
        timeout = float(setting("SANDBOX_TIMEOUT_S", DEFAULT_TIMEOUT_S))
    return _execute(bwrap, code, files or {}, float(timeout), limits or Limits())
