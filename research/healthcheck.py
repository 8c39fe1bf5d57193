"""Container health checks: `python -m research.healthcheck web`, `... worker NAME@HOST` or `... beat`.

web: GET /healthz on the local daphne (which checks the database); worker: the worker answers a Celery ping
over the broker; beat: its reaper completed a run recently (it touches BEAT_HEARTBEAT_FILE after each,
every REAPER_INTERVAL_S; research/beat.py). Exit status 0 = healthy, as Docker and Kubernetes expect.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request


def check_web(port: int) -> bool:
    hosts = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost").split(",") if h and "*" not in h]
    host = hosts[0].lstrip(".") if hosts else "localhost"
    request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz", headers={"Host": host})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310  (fixed loopback URL)
            return bool(response.status == 200)
    except OSError:
        return False


def check_worker(name: str) -> bool:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")
    from research.celery import app

    replies = app.control.ping(destination=[name], timeout=5)
    return any(name in reply for reply in replies)


def check_beat(path: str, interval_s: float) -> bool:
    """The reaper touched `path` within the last few intervals (at least 30 s: a slow database may delay a run)."""
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return False
    return age <= max(30.0, 5 * interval_s)


def main(argv: list[str]) -> int:
    if argv[:1] == ["web"]:
        return 0 if check_web(int(os.environ.get("PORT", "8000"))) else 1
    if argv[:1] == ["worker"] and len(argv) == 2:
        return 0 if check_worker(argv[1]) else 1
    if argv[:1] == ["beat"]:
        path = os.environ.get("BEAT_HEARTBEAT_FILE", "")
        if not path:
            print("BEAT_HEARTBEAT_FILE is not set: beat writes no heartbeat to check", file=sys.stderr)
            return 2
        return 0 if check_beat(path, float(os.environ.get("REAPER_INTERVAL_S", "2"))) else 1
    print("usage: python -m research.healthcheck web | worker NAME@HOST | beat", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
