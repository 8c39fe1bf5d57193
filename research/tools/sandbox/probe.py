"""Whether the sandbox works here: one trivial run, cached (fail closed: docs/tools.md)."""

from __future__ import annotations

import os
import sys
import threading

from research.tools.sandbox import common
from research.tools.sandbox.common import Limits, SandboxUnavailable
from research.tools.sandbox.execute import _execute
from research.tools.sandbox.seccomp import _seccomp_program

_probe_lock = threading.Lock()
_probe_result: tuple[bool, str] | None = None


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
    bwrap = common._find_executable("bwrap")
    if not bwrap:
        return False, "bubblewrap (bwrap) is not installed"
    needed = ["prlimit"] + (["setpriv"] if os.geteuid() == 0 else [])
    for tool in needed:
        if not common._find_executable(tool):
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
