"""The benchmark stack: everything a benchmark needs, set up from nothing in a temporary directory.

    stack = Stack().start()          # SQLite file DB (manage.py migrate), Redis, model double + test site
    stack.set_latency(ttft=0.5, tokens_per_s=50)
    stack.ensure_workers(count=1, concurrency=8)
    job_id = stack.create_job("How cheap is solar power?", max_steps=6)
    stack.wait_jobs([job_id])
    stack.stop()

The benchmark process itself is a Django client of the same database (it creates users and jobs
through research.jobs.services and reads results through the ORM), so Django is set up in-process
after the environment below is in place. Workers and daphne are real child processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from research import runtime  # noqa: E402  (no Django import)

TERMINAL = ("done", "failed", "cancelled")
QUESTIONS = (
    "How have solar power costs changed over the last decade?",
    "What is the outlook for battery storage on the grid?",
    "How efficient are heat pumps in cold climates?",
    "How fast are global solar installations growing?",
    "What limits the lifetime of lithium-ion batteries?",
    "Do rooftop solar panels pay back their cost?",
)
# Variables from the caller's environment that would point the stack somewhere else.
_FOREIGN_ENV = ("TEST_DB_NAME", "TEST_RUN_DIR", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL",
                "OUTPUTS_DIR", "LLM_REASONING_MODEL", "MCP_SERVERS", "CELERY_SOFT_TIME_LIMIT",
                "CELERY_HARD_TIME_LIMIT", "JOB_STEP_CONCURRENCY", "JOB_MAX_STEPS", "JOB_TOKEN_BUDGET")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def machine() -> dict[str, Any]:
    """What the numbers ran on: `nproc`, `free -g`, `python -V`, and the CPU model."""
    import platform

    import psutil

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count() or 0,
        "cpu": cpu or platform.processor(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
    }


@dataclass
class RssSampler:
    """Samples the resident memory of worker process trees (parent + pool children) in a thread.

    RSS sums count pages the forked pool children share with their parent once per process; every
    `pss_every`-th sample also reads PSS (shared pages divided among their users), which does not.
    """

    pids: list[int]
    interval: float = 0.2
    pss_every: int = 10
    peak_tree_mb: float = 0.0  # the largest single worker (all its processes), RSS
    peak_total_mb: float = 0.0  # all workers together, RSS
    peak_process_mb: float = 0.0  # the largest single process, RSS
    peak_tree_pss_mb: float = 0.0  # the largest single worker, PSS
    _samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        import psutil

        total = 0.0
        self._samples += 1
        with_pss = self._samples % self.pss_every == 1
        for pid in self.pids:
            try:
                root = psutil.Process(pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
            tree = pss = 0.0
            for proc in procs:
                try:
                    rss = proc.memory_info().rss / 2**20
                    if with_pss:
                        pss += getattr(proc.memory_full_info(), "pss", 0) / 2**20
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
                tree += rss
                self.peak_process_mb = max(self.peak_process_mb, rss)
            self.peak_tree_mb = max(self.peak_tree_mb, tree)
            self.peak_tree_pss_mb = max(self.peak_tree_pss_mb, pss)
            total += tree
        self.peak_total_mb = max(self.peak_total_mb, total)


class Stack:
    def __init__(self, *, keep: bool = False, verbose: bool = True, server: Path | None = None,
                 database: str = "sqlite") -> None:
        self.keep = keep
        self.server = server or ROOT / "bench" / "model_server.py"  # prints {"llm": ..., "site": ...}
        self.verbose = verbose
        self.database = database  # sqlite (one file) | postgres (a private server, as in production)
        self.postgres: Any = None  # tests.support.postgres.PostgresServer
        self.dir = Path(tempfile.mkdtemp(prefix="research-bench-"))
        self.env: dict[str, str] = {}
        self.redis: subprocess.Popen[bytes] | None = None
        self.model: subprocess.Popen[str] | None = None
        self.workers: list[Any] = []  # tests.support.procs.WorkerProcess
        self.worker_config: tuple[int, int] | None = None
        self._generation = 0
        self.asgi: Any = None  # tests.support.procs.AsgiServer
        self.llm_url = ""
        self.site_url = ""
        self.latency: dict[str, float] = {}
        self._user: Any = None

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"[bench] {message}", file=sys.stderr, flush=True)

    # --- life cycle ---------------------------------------------------------------------------------

    def start(self) -> Stack:
        self.log(f"stack in {self.dir}")
        redis_port = runtime.free_port()
        self.redis = runtime.start_embedded_redis(ROOT, port=redis_port, data_dir=self.dir / "redis")
        self.model = subprocess.Popen([sys.executable, str(self.server)], cwd=ROOT,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      start_new_session=True)
        assert self.model.stdout is not None
        info = json.loads(self.model.stdout.readline())
        self.llm_url, self.site_url = info["llm"], info["site"]
        for name in _FOREIGN_ENV:
            os.environ.pop(name, None)
        database_url = f"sqlite:///{self.dir / 'bench.sqlite3'}"
        if self.database == "postgres":
            from tests.support.postgres import PostgresServer

            self.postgres = PostgresServer(self.dir / "pg", runtime.free_port()).start()
            self.postgres.wait_ready()
            import psycopg

            with psycopg.connect(self.postgres.url("postgres"), autocommit=True) as conn:
                conn.execute("CREATE DATABASE bench")
            database_url = self.postgres.url("bench")
            self.log(f"PostgreSQL on port {self.postgres.port}")
        self.env = {
            "DJANGO_SETTINGS_MODULE": "research.settings",
            "DATABASE_URL": database_url,
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "OUTPUTS_DIR": str(self.dir / "outputs"),
            "TEST_RUN_DIR": str(self.dir),  # where tests.support.procs writes worker and daphne logs
            "SECRET_KEY": "bench-secret-key-not-for-production-0123456789abcdefghij",
            "DEBUG": "0",
            "DEV_MODE": "1",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "FETCH_ALLOW_LOOPBACK": "1",
            "SEARCH_PROVIDERS": "searxng",
            "SEARXNG_URL": self.site_url,
            "LLM_BASE_URL": self.llm_url,
            "LLM_API_KEY": "EMPTY",
            "LLM_MODEL": "test-model",
            "LLM_PROFILE": "qwen3",
            "LLM_CONTEXT_WINDOW": "32768",
            "DEFAULT_ENGINE": "llm",
            "JOB_CREATE_RATE": "1000000/h",
            # One user's throughput in every section but `fairness`, which turns the caps on for its workers.
            "FAIR_USER_RUNNING_JOBS": "0",
            "FAIR_USER_RUNNING_UNITS": "0",
            "TTS_BACKEND": "espeak",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        os.environ.update(self.env)
        started = time.monotonic()
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=dict(os.environ),
                       check=True)
        self.log(f"database migrated in {time.monotonic() - started:.1f}s")
        import django

        django.setup()
        return self

    def stop(self) -> None:
        self.stop_workers()
        if self.asgi is not None:
            self.asgi.stop()
            self.asgi = None
        if self.model is not None:
            if self.model.stdin is not None:
                self.model.stdin.close()
            try:
                self.model.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.model.kill()
            self.model = None
        if self.redis is not None:
            self.redis.terminate()
            try:
                self.redis.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.redis.kill()
            self.redis = None
        try:
            from django.db import connections

            connections.close_all()
        except Exception:
            pass
        if self.postgres is not None:
            self.postgres.stop()
            self.postgres = None
        if self.keep:
            self.log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the model double -------------------------------------------------------------------------

    def set_latency(self, *, ttft: float, tokens_per_s: float, think_words: int = 0) -> None:
        assert self.model is not None and self.model.stdin is not None and self.model.stdout is not None
        cmd = {"ttft": ttft, "tokens_per_s": tokens_per_s, "think_words": think_words}
        self.model.stdin.write(json.dumps(cmd) + "\n")
        self.model.stdin.flush()
        answer = json.loads(self.model.stdout.readline())
        assert answer.get("ok"), answer
        self.latency = {"ttft_s": ttft, "tokens_per_s": tokens_per_s, "think_words": think_words}

    # --- processes ------------------------------------------------------------------------------------

    def ensure_workers(self, *, count: int, concurrency: int) -> list[Any]:
        """`count` Celery workers of `concurrency` processes each (the first also runs beat, the reaper)."""
        if self.worker_config == (count, concurrency) and all(w.proc.poll() is None for w in self.workers):
            return self.workers
        from tests.support.procs import WorkerProcess

        self.stop_workers()
        started = time.monotonic()
        self._generation += 1  # fresh names: a worker's log is found by name, and "ready." must be its own
        self.workers = [WorkerProcess(dict(os.environ), concurrency=concurrency, beat=i == 0,
                                      name=f"bench{self._generation}-{i + 1}") for i in range(count)]
        for worker in self.workers:
            worker.start(wait=False)
        for worker in self.workers:
            worker.wait_ready(timeout=120)
        self.worker_config = (count, concurrency)
        self.log(f"{count} worker(s) × {concurrency} ready in {time.monotonic() - started:.1f}s")
        return self.workers

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []
        self.worker_config = None

    def ensure_asgi(self) -> Any:
        if self.asgi is None:
            from tests.support.procs import AsgiServer

            self.asgi = AsgiServer(dict(os.environ)).start()
        return self.asgi

    # --- users and jobs -----------------------------------------------------------------------------------

    def user(self) -> Any:
        if self._user is None:
            from django.contrib.auth.models import User

            self._user, _ = User.objects.get_or_create(username="bench", defaults={"email": "bench@example.com"})
        return self._user

    def session_cookie(self) -> str:
        from django.test import Client

        client = Client()
        client.force_login(self.user())
        return client.cookies["sessionid"].value

    def create_job(self, question: str, *, max_steps: int, step_concurrency: int = 0, auto_accept: bool = True,
                   outputs: Iterable[str] = ("md",), **options: Any) -> int:
        """An llm job; `options` adds job options (e.g. depth="heavy", runs=3)."""
        from research.jobs import services

        job = services.job_create(user=self.user(), question=question, options={
            "engine": "llm", "auto_accept": auto_accept, "max_steps": max_steps,
            "step_concurrency": step_concurrency, "outputs": list(outputs), "locale": "en-US", **options,
        })
        return int(job.pk)

    def wait_jobs(self, job_ids: list[int], *, statuses: Iterable[str] = TERMINAL, timeout: float = 600,
                  stall: float | None = None) -> None:
        """Wait until every job has one of `statuses`, at most `timeout` seconds; with `stall`, any progress
        of the jobs (a new event: a search, a fetch, a step or a report done) grants that many seconds more
        from then, so a long run on a slow machine fails only when nothing has moved for `stall` seconds.
        (Not only a finished job: a batch of 184 jobs moves in step, and none finishes until near the end.)
        Never past four times `timeout` in all: a job that loops writing events would otherwise hold it."""
        from django.db.models import Max

        from research.jobs.models import JobEvent, ResearchJob

        wanted = set(statuses)
        started = time.monotonic()
        deadline, ceiling = started + timeout, started + 4 * timeout
        seen: object = None
        checked = 0.0
        while True:
            rows = dict(ResearchJob.objects.filter(pk__in=job_ids).values_list("pk", "status"))
            if all(rows.get(pk) in wanted for pk in job_ids):
                return
            # Progress is looked for every few seconds at most (the events table grows large), and often
            # enough that a stall is never missed.
            if stall is not None and time.monotonic() - checked >= min(5.0, stall / 4):
                checked = time.monotonic()
                progress = (rows, JobEvent.objects.filter(job_id__in=job_ids).aggregate(Max("id"))["id__max"])
                if progress != seen:
                    deadline = min(ceiling, max(deadline, checked + stall))
                seen = progress
            if time.monotonic() > deadline:
                stuck = {pk: s for pk, s in rows.items() if s not in wanted}
                tails = "\n".join(w.tail(30) for w in self.workers)
                waited = time.monotonic() - started
                raise TimeoutError(f"jobs not {sorted(wanted)} after {waited:.0f}s: {stuck}\n{tails}")
            time.sleep(0.1)

    def require_done(self, job_ids: list[int]) -> None:
        from research.jobs.models import ResearchJob

        bad = list(ResearchJob.objects.filter(pk__in=job_ids).exclude(status="done").values_list("pk", "status",
                                                                                                   "error"))
        if bad:
            raise RuntimeError(f"benchmark jobs did not finish: {bad}")

    def warm_up(self, *, steps: int, jobs: int = 1) -> None:
        """Run throw-away jobs with an instant model so every pool process has imported what it needs."""
        saved = dict(self.latency)
        self.set_latency(ttft=0.0, tokens_per_s=0.0)
        ids = [self.create_job(QUESTIONS[i % len(QUESTIONS)], max_steps=steps) for i in range(jobs)]
        self.wait_jobs(ids, timeout=300)
        self.require_done(ids)
        if saved:
            self.set_latency(ttft=saved["ttft_s"], tokens_per_s=saved["tokens_per_s"],
                             think_words=int(saved["think_words"]))


def ts(value: datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0
