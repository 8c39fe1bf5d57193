"""Real processes for integration tests: Redis, Celery workers and the ASGI server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import httpx

from research import runtime

ROOT = Path(__file__).resolve().parents[2]


def base_env(**extra: str) -> dict[str, str]:
    run = os.environ["TEST_RUN_DIR"]
    env = dict(os.environ)
    env.update({
        "DATABASE_URL": os.environ["TEST_CHILD_DATABASE_URL"],  # the test database (SQLite file or PostgreSQL)
        "DJANGO_SETTINGS_MODULE": "research.settings",
        "PYTHONUNBUFFERED": "1",
        "TEST_RUN_DIR": run,
    })
    for name in ("TEST_DB_NAME", "TEST_CHILD_DATABASE_URL"):
        env.pop(name, None)  # the children use the test database as their main one
    env.update(extra)
    return env


class RedisServer:
    def __init__(self, url: str) -> None:
        self.url = url
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        data = Path(os.environ["TEST_RUN_DIR"]) / f"redis-{self.port}"
        self.proc = runtime.start_embedded_redis(ROOT, port=self.port, data_dir=data)
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()


class WorkerProcess:
    """One `celery worker` process (prefork) with its own process group."""

    counter = 0
    live: ClassVar[set[WorkerProcess]] = set()  # started and not yet stopped or killed (tests may pause them)

    def __init__(self, env: dict[str, str], *, concurrency: int = 4, beat: bool = False, name: str = "",
                 cwd: Path = ROOT) -> None:
        WorkerProcess.counter += 1
        self.cwd = cwd  # another checkout stands in for another host (tests/scale)
        self.name = name or f"w{WorkerProcess.counter}-{os.getpid()}"
        self.env = env
        self.concurrency = concurrency
        self.beat = beat
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = Path(os.environ["TEST_RUN_DIR"]) / f"worker-{self.name}.log"

    def start(self, wait: bool = True) -> WorkerProcess:
        argv = [sys.executable, "-m", "celery", "-A", "research", "worker", "-Q", "agents,render,kb",
                "-c", str(self.concurrency), "--loglevel", "INFO", "-n", f"{self.name}@%h",
                "--without-gossip", "--without-mingle"]
        if self.beat:
            argv += ["-B", "-s", str(Path(os.environ["TEST_RUN_DIR"]) / f"beat-{self.name}")]
        out = self.log.open("ab")
        self.proc = subprocess.Popen(argv, cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        WorkerProcess.live.add(self)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.tail()}")
            if "ready." in self.log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready in {timeout}s:\n{self.tail()}")

    def tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def children(self) -> list[int]:
        import psutil

        if self.proc is None:
            return []
        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def kill(self) -> None:
        """kill -9 the whole worker: parent and pool children."""
        if self.proc is None:
            return
        WorkerProcess.live.discard(self)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        WorkerProcess.live.discard(self)
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.kill()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pids(self) -> set[int]:
        """The worker's own pid and its pool children's."""
        return ({self.proc.pid} if self.proc is not None else set()) | set(self.children())


class MakeWorkerProcess(WorkerProcess):
    """A worker started the way an operator adds one: `make worker` (WORKER_CONCURRENCY sets its pool)."""

    def start(self, wait: bool = True) -> MakeWorkerProcess:
        env = dict(self.env, WORKER_CONCURRENCY=str(self.concurrency))
        out = self.log.open("ab")
        self.proc = subprocess.Popen(["make", "--no-print-directory", "worker"], cwd=ROOT, env=env, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        WorkerProcess.live.add(self)
        if wait:
            self.wait_ready()
        return self


class BeatProcess:
    """`celery beat` on its own (as `make run` and docker-compose run it): schedules the reaper."""

    counter = 0

    def __init__(self, env: dict[str, str], cwd: Path = ROOT) -> None:
        BeatProcess.counter += 1
        run = Path(os.environ["TEST_RUN_DIR"])
        self.env = env
        self.cwd = cwd
        self.log = run / f"beat-{BeatProcess.counter}-{os.getpid()}.log"
        self.schedule = run / f"beat-{BeatProcess.counter}-{os.getpid()}.schedule"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> BeatProcess:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "research", "beat", "--loglevel", "INFO", "-s", str(self.schedule)],
            cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"beat exited early:\n{self.log.read_text(errors='replace')[-3000:]}")
            if "Scheduler: " in self.log.read_text(errors="replace"):  # it logs each due task it runs or sends
                return self
            time.sleep(0.2)
        raise RuntimeError("beat did not send its first task in 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)


class AsgiServer:
    """daphne serving research.asgi on a free port."""

    def __init__(self, env: dict[str, str], cwd: Path = ROOT) -> None:
        self.env = env
        self.cwd = cwd
        self.port = runtime.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = Path(os.environ["TEST_RUN_DIR"]) / f"daphne-{self.port}.log"

    def start(self) -> AsgiServer:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "research.asgi:application"],
            cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/accounts/login/", timeout=1)
                return self
            except httpx.HTTPError:
                if self.proc.poll() is not None:
                    raise RuntimeError(self.log.read_text()) from None
                time.sleep(0.2)
        raise RuntimeError("daphne did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # many open sockets can outlast a graceful stop
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


@contextmanager
def other_workers_paused() -> Iterator[None]:
    """Stop every running test worker (their reapers would pick up steps a test strands on purpose) and
    start them again afterwards."""
    paused = [w for w in list(WorkerProcess.live) if w.running]
    for proc in paused:
        proc.stop()
    yield
    for proc in paused:
        if proc.log.exists():  # start() waits for "ready." in the log: let it see only the new run's
            proc.log.rename(proc.log.with_name(proc.log.name + f".{time.time_ns()}"))
        proc.start()
