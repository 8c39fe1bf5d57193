"""`make run`: embedded Redis (when REDIS_URL is unset), a Celery worker, Celery beat and the ASGI server.

A small supervisor for the one-machine mode. A worker or beat that dies (a crash, or the OOM killer's
SIGKILL) is restarted with backoff (1 s doubling to 30 s; a child that ran a stable minute starts again
at 1 s) while Redis and the web server keep serving; the reaper (in beat) then re-queues the work the
dead worker held. Only the death of Redis or the web server, or Ctrl-C / SIGTERM, stops everything.
One process group per child, so nothing is left behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
STABLE_AFTER_S = 60.0  # a child that ran this long before dying is restarted after BACKOFF_FIRST_S again


def backoff_delay(failures: int) -> float:
    """Seconds to wait before restart number `failures` (1-based) of a child that keeps dying."""
    return min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, failures - 1))


@dataclass
class Child:
    """One supervised process. `restart`: worker and beat are restarted; Redis and web are critical."""

    name: str
    argv: list[str]
    env: dict[str, str]
    restart: bool
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0  # consecutive quick deaths, for the backoff
    restart_at: float | None = None  # when a dead restartable child is due to start again
    restarts: int = 0

    def start(self) -> None:
        self.proc = _spawn(self.name, self.argv, self.env)
        self.started_at = time.monotonic()
        self.restart_at = None

    def died(self, now: float) -> None:
        """Log the death, clear what is left of its process group, and schedule the restart."""
        assert self.proc is not None
        ran = now - self.started_at
        self.failures = 1 if ran >= STABLE_AFTER_S else self.failures + 1
        delay = backoff_delay(self.failures)
        self.restart_at = now + delay
        self.restarts += 1
        # Pool children of a worker whose parent was killed would keep running tasks nobody supervises.
        _kill_group(self.proc.pid)
        print(f"[run] {self.name} exited with {self.proc.returncode} after {ran:.0f} s; "
              f"restarting in {delay:.0f} s (restart {self.restarts})", file=sys.stderr, flush=True)
        self.proc = None


def _spawn(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    print(f"[run] starting {name}: {' '.join(argv)}", flush=True)
    return subprocess.Popen(argv, cwd=BASE_DIR, env=env, start_new_session=True)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for name, proc in procs.items():
        if proc.poll() is None:
            print(f"[run] stopping {name}", flush=True)
            _signal(proc, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(proc, signal.SIGKILL)
            proc.wait(timeout=5)


def _signal(proc: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the child's whole group when it leads one (worker pools), else the child itself (Redis)."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
    except ProcessLookupError:
        pass


def worker_argv(*, name: str = "", concurrency: int | None = None, beat: bool = False) -> list[str]:
    conc = concurrency or int(os.environ.get("WORKER_CONCURRENCY", "4"))
    argv = [sys.executable, "-m", "celery", "-A", "research", "worker", "-Q", "agents,render,kb",
            "-c", str(conc), "--loglevel", os.environ.get("WORKER_LOG_LEVEL", "INFO"),
            "-n", name or f"worker-{os.getpid()}@%h", "--without-gossip", "--without-mingle"]
    if beat:
        argv += ["-B", "-s", str(BASE_DIR / ".run" / "celerybeat-schedule")]
    return argv


def supervise(children: list[Child], redis: subprocess.Popen[bytes] | None, should_stop: list[bool]) -> int:
    """Run until a critical child dies (1) or `should_stop[0]` is set by a signal (0); stop everything."""
    for child in children:
        child.start()
    code = 0
    try:
        while not should_stop[0]:
            now = time.monotonic()
            if redis is not None and redis.poll() is not None:
                print(f"[run] redis exited with {redis.returncode}; stopping", file=sys.stderr, flush=True)
                code = 1
                break
            for child in children:
                if child.proc is not None and child.proc.poll() is not None:
                    if not child.restart:
                        print(f"[run] {child.name} exited with {child.proc.returncode}; stopping",
                              file=sys.stderr, flush=True)
                        code = 1
                        break
                    child.died(now)
                elif child.proc is None and child.restart_at is not None and now >= child.restart_at:
                    print(f"[run] restarting {child.name}", file=sys.stderr, flush=True)
                    child.start()
            if code:
                break
            time.sleep(0.5)
    finally:
        procs = {c.name: c.proc for c in children if c.proc is not None}
        if redis is not None:
            procs["redis"] = redis  # stopped last: the others may still be talking to it
        _stop(procs)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--no-web", action="store_true", help="only Redis, the worker and beat")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")
    from research import runtime

    env = dict(os.environ)
    redis: subprocess.Popen[bytes] | None = None
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        redis_url = runtime.default_redis_url(BASE_DIR)
        if runtime.redis_is_ours(BASE_DIR, redis_url):
            print(f"[run] using this app's Redis already running at {runtime.redacted_url(redis_url)}", flush=True)
        else:
            print(f"[run] starting embedded Redis at {runtime.redacted_url(redis_url)}", flush=True)
            redis = runtime.start_embedded_redis(BASE_DIR, port=runtime.url_port(redis_url))
    elif not runtime.redis_alive(redis_url):
        print(f"[run] REDIS_URL={runtime.redacted_url(redis_url)} does not answer", file=sys.stderr)
        return 2
    env["REDIS_URL"] = redis_url

    should_stop = [False]

    def on_signal(signum: int, _frame: object) -> None:
        should_stop[0] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    runtime.run_dir(BASE_DIR)
    children = [
        Child("worker", worker_argv(name="worker-main@%h"), env, restart=True),
        Child("beat", [sys.executable, "-m", "celery", "-A", "research", "beat", "--loglevel", "WARNING",
                       "-s", str(BASE_DIR / ".run" / "celerybeat-schedule")], env, restart=True),
    ]
    if not args.no_web:
        children.append(Child("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(args.port),
                                      "research.asgi:application"], env, restart=False))
        print(f"[run] open http://127.0.0.1:{args.port}/  (Ctrl-C stops everything)", flush=True)
    return supervise(children, redis, should_stop)


if __name__ == "__main__":
    sys.exit(main())
