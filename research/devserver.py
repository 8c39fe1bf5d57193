"""`make run`: embedded Redis (when REDIS_URL is unset), a Celery worker, Celery beat and the ASGI server.

Ctrl-C or SIGTERM stops all of them. One process group per child, so nothing is left behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def _spawn(name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    print(f"[run] starting {name}: {' '.join(argv)}", flush=True)
    return subprocess.Popen(argv, cwd=BASE_DIR, env=env, start_new_session=True)


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
    argv = [sys.executable, "-m", "celery", "-A", "research", "worker", "-Q", "agents,render",
            "-c", str(conc), "--loglevel", os.environ.get("WORKER_LOG_LEVEL", "INFO"),
            "-n", name or f"worker-{os.getpid()}@%h", "--without-gossip", "--without-mingle"]
    if beat:
        argv += ["-B", "-s", str(BASE_DIR / ".run" / "celerybeat-schedule")]
    return argv


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--no-web", action="store_true", help="only Redis, the worker and beat")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")
    from research import runtime

    env = dict(os.environ)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        redis_url = runtime.default_redis_url(BASE_DIR)
        if runtime.redis_is_ours(BASE_DIR, redis_url):
            print(f"[run] using this app's Redis already running at {redis_url}", flush=True)
        else:
            print(f"[run] starting embedded Redis at {redis_url}", flush=True)
            procs["redis"] = runtime.start_embedded_redis(BASE_DIR, port=runtime.url_port(redis_url))
    elif not runtime.redis_alive(redis_url):
        print(f"[run] REDIS_URL={redis_url} does not answer", file=sys.stderr)
        return 2
    env["REDIS_URL"] = redis_url

    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    runtime.run_dir(BASE_DIR)
    procs["worker"] = _spawn("worker", worker_argv(name="worker-main@%h"), env)
    procs["beat"] = _spawn("beat", [sys.executable, "-m", "celery", "-A", "research", "beat", "--loglevel", "WARNING",
                                    "-s", str(BASE_DIR / ".run" / "celerybeat-schedule")], env)
    if not args.no_web:
        procs["web"] = _spawn("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(args.port),
                                      "research.asgi:application"], env)
        print(f"[run] open http://127.0.0.1:{args.port}/  (Ctrl-C stops everything)", flush=True)
    code = 0
    try:
        while not stopping:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    print(f"[run] {name} exited with {proc.returncode}; stopping", file=sys.stderr, flush=True)
                    stopping, code = True, 1
                    break
            time.sleep(0.5)
    finally:
        _stop(procs)
    return code


if __name__ == "__main__":
    sys.exit(main())
