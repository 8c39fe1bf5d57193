"""For the CLI: use the running app's Redis and workers, or start them for as long as the command runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from django.conf import settings

from research import runtime
from research.devserver import worker_argv


def workers_alive(timeout: float = 1.0) -> bool:
    from research.celery import app

    try:
        return bool(app.control.ping(timeout=timeout))
    except Exception:
        return False


@contextmanager
def infrastructure(*, detach: bool = False, echo: bool = True) -> Iterator[None]:
    """Ensure Redis and at least one worker answer. Starts what's missing; stops it on exit unless detached."""
    started: list[subprocess.Popen[bytes]] = []
    alive = runtime.redis_alive(settings.REDIS_URL)
    if not settings.REDIS_EMBEDDED and not alive:
        raise RuntimeError(f"REDIS_URL={runtime.redacted_url(settings.REDIS_URL)} does not answer")
    # The embedded Redis is used only when it proves it is this checkout's (runtime.redis_is_ours).
    need_redis = settings.REDIS_EMBEDDED and not runtime.redis_is_ours(settings.BASE_DIR, settings.REDIS_URL)
    if need_redis and alive:  # another program took the port after the settings picked it
        raise RuntimeError(f"{runtime.redacted_url(settings.REDIS_URL)} is another program's Redis; "
                           "set REDIS_URL or stop that one")
    if need_redis:
        if echo:
            print(f"starting embedded Redis at {runtime.redacted_url(settings.REDIS_URL)}", file=sys.stderr)
        started.append(runtime.start_embedded_redis(settings.BASE_DIR, port=runtime.url_port(settings.REDIS_URL)))
    if not workers_alive():
        if echo:
            print("no worker answered; starting one for this command", file=sys.stderr)
        env = dict(os.environ, REDIS_URL=settings.REDIS_URL)
        out = open(runtime.run_dir(settings.BASE_DIR) / "cli-worker.log", "ab")
        started.append(subprocess.Popen(worker_argv(name=f"cli-{os.getpid()}@%h", beat=True), env=env,
                                        cwd=settings.BASE_DIR, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True))
    try:
        yield
    finally:
        if not detach:
            for proc in reversed(started):
                proc.terminate()
                with suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=20)
                if proc.poll() is None:
                    proc.kill()
