"""`make run`'s supervisor: embedded Redis, worker, beat and web come up; SIGTERM stops every one of them;
a worker or beat killed with SIGKILL is restarted (with backoff) while the app keeps serving, and the job
it was running finishes; the death of the web server stops everything."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from research import devserver, runtime
from research.jobs.models import JobStatus, JobStep, ResearchJob
from tests.faults.stack import Director, PeerFakeLLM, wait_until
from tests.support.procs import base_env, other_workers_paused
from tests.support.scenario import Scenario

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How have solar power costs changed?"


def _start(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "research.devserver", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail(log.read_text())


def _child(proc: subprocess.Popen[bytes], needle: str) -> psutil.Process | None:
    """The supervisor's direct child whose command line contains `needle`."""
    for child in psutil.Process(proc.pid).children():
        try:
            if needle in " ".join(child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def _running(procs: list[psutil.Process]) -> dict[psutil.Process, str]:
    """Each process still running, with its command line. Zombies and the gone are left out: Redis forks a
    child for each background save, and one that has exited but not yet been reaped has no command line."""
    out: dict[psutil.Process, str] = {}
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out[p] = " ".join(p.cmdline())
        except psutil.NoSuchProcess:  # ZombieProcess is one too
            continue
    return out


def test_run_serves_the_app_and_sigterm_stops_everything(django_db_setup, tmp_path):
    port, redis_port = runtime.free_port(), runtime.free_port()
    env = base_env(EMBEDDED_REDIS_PORT=str(redis_port))
    env.pop("REDIS_URL")  # unset: the supervisor must start its own Redis
    proc = _start(env, port, tmp_path / "run.log")
    redis_url = f"redis://:{runtime.redis_password(ROOT)}@127.0.0.1:{redis_port}/0"  # .run/redis-password
    try:
        assert runtime.redis_alive(redis_url)
        assert not runtime.redis_alive(f"redis://127.0.0.1:{redis_port}/0")  # no password: refused
        running = _running(psutil.Process(proc.pid).children(recursive=True))
        children, cmdlines = list(running), list(running.values())
        for needle in ("redis-server", "celery -A research worker", "celery -A research beat", "daphne"):
            assert any(needle in c for c in cmdlines), (needle, cmdlines)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=40) == 0
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not _running(alive), list(_running(alive).values())
        assert not runtime.redis_alive(redis_url)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)


def test_backoff_doubles_to_a_cap_and_resets_after_a_stable_minute(monkeypatch):
    assert [devserver.backoff_delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 30, 30, 30]
    child = devserver.Child("worker", ["true"], {}, restart=True)
    monkeypatch.setattr(devserver, "_kill_group", lambda pgid: None)
    clock = 1000.0
    delays = []
    for ran in (5, 5, 5, devserver.STABLE_AFTER_S + 1, 5):
        child.proc = subprocess.Popen(["true"])
        child.proc.wait()
        child.started_at = clock
        clock += ran
        child.died(clock)
        assert child.restart_at is not None
        delays.append(child.restart_at - clock)
    assert delays == [1, 2, 4, 1, 2]
    assert child.restarts == 5


@pytest.fixture
def no_other_workers() -> Iterator[None]:
    """The session's worker shares the test database; its reaper would run the stranded step. Pause it."""
    with other_workers_paused():
        yield


@pytest.fixture
def director() -> Iterator[Director]:
    llm = PeerFakeLLM(Scenario(steps=1, step_types=("research",), bogus_citation=False))
    llm.start()
    director = Director(llm, record_pids=True)
    llm.set_responder(director)
    yield director
    director.release_all()
    llm.stop()


@pytest.mark.django_db(transaction=True)
def test_sigkilled_worker_and_beat_are_restarted_and_the_job_finishes(no_other_workers, director, alice, client,
                                                                     test_site, tmp_path):
    """kill -9 the worker mid-step (and beat): the page stays up, both come back, the reaper resumes the
    step on the new worker and the job ends `done` with no second command. Then kill -9 the web server:
    that one stops everything."""
    port, redis_port = runtime.free_port(), runtime.free_port()
    redis_url = f"redis://:{runtime.redis_password(ROOT)}@127.0.0.1:{redis_port}/0"  # the embedded one's password
    log = tmp_path / "run.log"
    env = base_env(EMBEDDED_REDIS_PORT=str(redis_port), SEARXNG_URL=test_site.url, SEARCH_PROVIDERS="searxng",
                   LLM_BASE_URL=director.llm.base_url, LLM_MODEL="test-model", LLM_PROFILE="qwen3",
                   LLM_CONTEXT_WINDOW="32768", WORKER_CONCURRENCY="2",
                   # Short leases and a fast reaper, so the dead worker's step is re-queued within seconds.
                   STEP_LEASE_S="6", REAPER_INTERVAL_S="1", STEP_QUEUE_GRACE_S="10")
    env.pop("REDIS_URL")
    held = director.gate("researcher", "s1")
    proc = _start(env, port, log)
    try:
        wait_until(lambda: "ready." in log.read_text(errors="replace"), timeout=90, what="the worker")
        started = subprocess.run([sys.executable, "manage.py", "research", QUESTION, "--engine", "llm",
                                  "--auto-accept", "--max-steps", "1", "--outputs", "md", "--user", "alice",
                                  "--detach", "--json"], cwd=ROOT, env=dict(env, REDIS_URL=redis_url),
                                 capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr[-3000:]
        assert "starting one for this command" not in started.stderr  # it used the supervisor's worker
        job = ResearchJob.objects.get(pk=json.loads(started.stdout.strip().splitlines()[-1])["job"])
        held.wait_arrival(timeout=90)

        worker, beat = _child(proc, "celery -A research worker"), _child(proc, "celery -A research beat")
        assert worker is not None and beat is not None
        doomed = {worker.pid, *(c.pid for c in worker.children(recursive=True))}
        assert director.starts("s1")[0].pid in doomed
        os.kill(worker.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` or the OOM killer does
        os.kill(beat.pid, signal.SIGKILL)

        def gone() -> bool:  # the supervisor also clears the dead worker's orphaned pool children
            return not [p for p in doomed if psutil.pid_exists(p)
                        and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]

        wait_until(gone, timeout=15, what="the killed worker's processes to be gone")
        held.open()
        client.force_login(alice)
        cookies = {"sessionid": client.cookies["sessionid"].value}
        page = httpx.get(f"http://127.0.0.1:{port}/jobs/{job.pk}/", cookies=cookies, timeout=30)
        assert page.status_code == 200 and QUESTION in page.text  # the web server kept serving
        assert runtime.redis_alive(redis_url)

        def done() -> bool:
            job.refresh_from_db()
            return job.status in (JobStatus.DONE, JobStatus.FAILED)

        wait_until(done, timeout=150, what=f"job {job.pk} to end\n{log.read_text(errors='replace')[-4000:]}")
        assert job.status == JobStatus.DONE, job.error
        text = log.read_text(errors="replace")
        assert "[run] worker exited with -9" in text and "[run] beat exited with -9" in text
        assert "restarting in 1 s" in text and "[run] restarting worker" in text and "; stopping" not in text
        new_worker = _child(proc, "celery -A research worker")
        assert new_worker is not None and new_worker.pid != worker.pid
        assert _child(proc, "celery -A research beat") is not None
        starts = director.starts("s1")
        assert len(starts) == 2 and starts[1].pid in {c.pid for c in new_worker.children(recursive=True)}
        assert JobStep.objects.get(job=job, step_id="s1").attempts == 2
        assert httpx.get(f"http://127.0.0.1:{port}/jobs/{job.pk}/", cookies=cookies, timeout=30).status_code == 200

        # The web server is critical: its death stops Redis, the worker and beat.
        children = psutil.Process(proc.pid).children(recursive=True)
        web = _child(proc, "daphne")
        assert web is not None
        os.kill(web.pid, signal.SIGKILL)
        assert proc.wait(timeout=40) == 1
        assert "[run] web exited with -9; stopping" in log.read_text(errors="replace")
        _, alive = psutil.wait_procs(children, timeout=15)
        assert not _running(alive), list(_running(alive).values())
        assert not runtime.redis_alive(redis_url)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
