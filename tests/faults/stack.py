"""An isolated stack for fault and load tests: its own Redis, model double, workers, beat and daphne.

The session's worker shares the test database, and its reaper would pick up (and run) the steps these
tests strand on purpose, so the fixtures here stop every other live worker for the package and start
them again afterwards. Jobs reach this stack's Redis either through the CLI (`manage.py research
--detach --json`, with the stack's environment) or through services.job_create in the test process,
whose Celery app is pointed at this stack's Redis for the package.

A Director is the model's responder: it plays tests.support.scenario.Scenario, records every call
(agent, step, first round of a step attempt, and on request the calling process) and lets a test
hook in: block a call on a Gate, return a custom plan, kill the caller, ...
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from research.jobs.models import JobEvent, ResearchJob, Source, StepStatus
from research.runtime import free_port
from tests.integration.helpers import assert_event_log_complete
from tests.support.brokers import layers_pointed_at, redis_clients_pointed_at
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.procs import (
    AsgiServer,
    BeatProcess,
    MakeWorkerProcess,
    RedisServer,
    WorkerProcess,
    base_env,
    other_workers_paused,
)
from tests.support.scenario import Scenario, agent_of, section

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How have solar power costs changed?"
FACETS = ("Background and key facts", "Current developments and data", "Comparisons and viewpoints",
          "Impacts and outlook", "Open questions and risks")


# --- the model double ---------------------------------------------------------------------------------


class PeerFakeLLM(FakeLLM):
    """The fake model server, able to tell which local process sent the request being answered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._peer = threading.local()

    def _chat(self, h: Any, body: dict[str, Any]) -> None:
        self._peer.port = h.client_address[1]
        return super()._chat(h, body)

    def caller_pid(self) -> int | None:
        """The pid of the process whose request this handler thread is answering (None if gone)."""
        port = getattr(self._peer, "port", None)
        for proc in psutil.Process().children(recursive=True):
            try:
                for conn in proc.net_connections(kind="tcp"):
                    if conn.laddr and conn.laddr.port == port and conn.raddr and conn.raddr.port == self.port:
                        return proc.pid
            except psutil.Error:
                continue
        return None


def step_of(body: dict[str, Any]) -> str:
    """The plan step a researcher / coder request works on ("" for other agents)."""
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            match = re.search(r"^id: (\S+)$", section(str(message.get("content") or ""), "Current step"), re.M)
            return match.group(1) if match else ""
    return ""


def question_of(body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            return section(str(message.get("content") or ""), "Question")
    return ""


def first_round(body: dict[str, Any]) -> bool:
    """True for the first request of a step attempt: the researcher's round 1 (its workspace may
    already hold an opening search), else no assistant turn yet (the coder)."""
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            numbers = re.findall(r"\d+", section(str(message.get("content") or ""), "Round"))
            if numbers:
                return numbers[0] == "1"
            break
    return not any(m.get("role") == "assistant" for m in body.get("messages") or [])


def plan_reply(steps: list[dict[str, Any]], title: str = "Solar power costs") -> Reply:
    """A planner answer with exactly these steps: dicts with id and optional step_type / depends_on / title."""
    out = []
    for index, step in enumerate(steps):
        kind = step.get("step_type", "research")
        facet = FACETS[index % len(FACETS)]
        out.append({"id": step["id"], "title": step.get("title", f"{facet}: solar power costs"),
                    "description": f"Investigate {facet.lower()} for: solar power costs.", "step_type": kind,
                    "need_search": kind == "research", "depends_on": list(step.get("depends_on", []))})
    plan = {"locale": "en-US", "title": title, "thought": "Background first, then data.",
            "has_enough_context": False, "steps": out}
    return Reply(content=json.dumps(plan))


@dataclass
class Call:
    agent: str
    step: str
    first: bool
    question: str
    pid: int | None = None
    at: float = field(default_factory=time.monotonic)


Hook = Callable[[Call, dict[str, Any]], Reply | None]


class Gate:
    """Holds the calls that reach it until the test opens it (at most `timeout` seconds)."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.opened = threading.Event()
        self.hits = 0

    def hold(self, timeout: float = 120) -> None:
        self.hits += 1
        self.arrived.set()
        self.opened.wait(timeout)

    def open(self) -> None:
        self.opened.set()

    def wait_arrival(self, timeout: float = 60) -> None:
        assert self.arrived.wait(timeout), "no call reached the gate"


class Director:
    """The model's responder for the stack: Scenario answers, test hooks first, every call recorded."""

    def __init__(self, llm: PeerFakeLLM, scenario: Scenario | None = None, record_pids: bool = False) -> None:
        self.llm = llm
        self.scenario = scenario or Scenario(bogus_citation=False)
        self.hooks: list[Hook] = []
        self.calls: list[Call] = []
        self.errors: list[str] = []
        self.record_pids = record_pids
        self.lock = threading.Lock()
        self.gates: list[Gate] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        call = Call(agent=agent_of(body), step=step_of(body), first=first_round(body), question=question_of(body))
        if self.record_pids and call.first and call.step:
            call.pid = self.llm.caller_pid()
        with self.lock:
            self.calls.append(call)
        try:
            for hook in list(self.hooks):
                reply = hook(call, body)
                if reply is not None:
                    return reply
        except Exception as exc:  # a broken hook is a test bug: record it for the test to fail on
            self.errors.append(f"{type(exc).__name__}: {exc}")
            raise
        return self.scenario(body)

    # --- hooks
    def gate(self, agent: str, step: str = "", *, times: int = 1) -> Gate:
        """Hold the first `times` first-round calls of `agent` (for `step`, if given)."""
        gate = Gate()
        self.gates.append(gate)

        def hook(call: Call, body: dict[str, Any]) -> Reply | None:
            if call.agent == agent and call.first and (not step or call.step == step) and gate.hits < times:
                gate.hold()
            return None

        self.hooks.append(hook)
        return gate

    def plan(self, steps: list[dict[str, Any]], *, question: str = "") -> None:
        """The planner answers with exactly these steps (for jobs whose question contains `question`)."""

        def hook(call: Call, body: dict[str, Any]) -> Reply | None:
            if call.agent == "planner" and question in call.question:
                return plan_reply(steps)
            return None

        self.hooks.append(hook)

    def release_all(self) -> None:
        for gate in self.gates:
            gate.open()

    # --- records
    def starts(self, step: str) -> list[Call]:
        """Every attempt the researcher made at `step` (its first-round calls)."""
        with self.lock:
            return [c for c in self.calls if c.agent in ("researcher", "coder") and c.step == step and c.first]


# --- the stack ------------------------------------------------------------------------------------------


class Stack:
    def __init__(self, env: dict[str, str], llm: PeerFakeLLM, redis: RedisServer) -> None:
        self.env = env
        self.llm = llm
        self.redis = redis
        self.director = Director(llm)
        llm.set_responder(self.director)
        self.workers: list[WorkerProcess] = []
        self.beats: list[BeatProcess] = []
        self.servers: list[AsgiServer] = []

    def _env(self, overrides: dict[str, Any]) -> dict[str, str]:
        return dict(self.env, **{k: str(v) for k, v in overrides.items()})

    def worker(self, concurrency: int = 4, **env: Any) -> WorkerProcess:
        proc = WorkerProcess(self._env(env), concurrency=concurrency)
        self.workers.append(proc)
        return proc.start()

    def make_worker(self, concurrency: int = 2, **env: Any) -> MakeWorkerProcess:
        """A replacement worker started with `make worker`, as an operator would."""
        proc = MakeWorkerProcess(self._env(env), concurrency=concurrency)
        self.workers.append(proc)
        return proc.start()

    def beat(self, **env: Any) -> BeatProcess:
        proc = BeatProcess(self._env(env))
        self.beats.append(proc)
        return proc.start()

    def web(self, **env: Any) -> AsgiServer:
        server = AsgiServer(self._env(env))
        self.servers.append(server)
        return server.start()

    def manage(self, *args: str, timeout: float = 120, **env: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self._env(env),
                              capture_output=True, text=True, timeout=timeout)

    def logs(self) -> str:
        parts = [f"--- worker {w.name}:\n{w.tail(40)}" for w in self.workers]
        parts += [f"--- beat:\n{b.log.read_text(errors='replace')[-2000:]}" for b in self.beats if b.log.exists()]
        return "\n".join(parts)

    def close(self) -> None:
        self.director.release_all()
        for proc in self.workers:
            proc.kill()
        for beat in self.beats:
            beat.stop()
        for server in self.servers:
            server.stop()
        self.llm.up()
        self.llm.api_key = None
        if self.redis.proc is None or self.redis.proc.poll() is not None:
            self.redis.start()
        import redis

        redis.Redis.from_url(self.redis.url).flushall()  # no stale messages for the next test


def hard_restart_redis(server: RedisServer, *, down: Callable[[], None] | None = None) -> None:
    """kill -9 the Redis server and bring it back empty (no persistence survives), like a cache node."""
    assert server.proc is not None
    server.proc.kill()
    server.proc.wait(timeout=10)
    data = Path(os.environ["TEST_RUN_DIR"]) / f"redis-{server.port}"
    shutil.rmtree(data, ignore_errors=True)
    if down is not None:
        down()  # what happens while Redis is away
    server.start()


# --- waiting and checking ------------------------------------------------------------------------------


def wait_until(predicate: Callable[[], Any], *, timeout: float, what: str, stack: Stack | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{stack.logs() if stack else ''}")


def kill_worker(worker: Any, *, stack: Stack | None = None) -> float:
    """kill -9 of the whole worker (parent and pool); once none of its processes runs any more, returns the
    wall-clock time of the kill."""
    doomed = worker.pids()
    worker.kill()
    killed_at = time.time()

    def gone() -> bool:
        for pid in doomed:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    return False
            except psutil.NoSuchProcess:
                pass
        return True

    wait_until(gone, timeout=10, what="the killed worker's processes to be gone", stack=stack)
    return killed_at


def job_summary_when_ended(job: ResearchJob, *, timeout: float, stack: Stack) -> dict[str, Any]:
    """`manage.py job ID --json` (the CLI contract) once the job is done or failed."""

    def ended() -> dict[str, Any] | None:
        shown = stack.manage("job", str(job.pk), "--json", timeout=60)
        assert shown.returncode == 0, shown.stderr
        summary: dict[str, Any] = json.loads(shown.stdout)
        return summary if summary["status"] in ("done", "failed") else None

    return wait_until(ended, timeout=timeout, what="the job to end (job --json)", stack=stack)


def wait_job(job: ResearchJob, statuses: set[str], *, timeout: float, stack: Stack) -> ResearchJob:
    def done() -> bool:
        job.refresh_from_db()
        return job.status in statuses

    try:
        wait_until(done, timeout=timeout, what=f"job {job.pk} to reach {statuses}")
    except AssertionError:
        events = list(JobEvent.objects.filter(job=job).values_list("seq", "type", "payload"))[-20:]
        raise AssertionError(f"job {job.pk} stuck in {job.status}; error={job.error!r}\nevents={events}\n"
                             f"{stack.logs()}") from None
    return job


def step_state(job: ResearchJob, step_id: str) -> str:
    return str(job.steps.filter(step_id=step_id).values_list("status", flat=True).first())


def check_event_log(job: ResearchJob) -> list[JobEvent]:
    """Nothing lost, nothing duplicated: seqs 1..N; each milestone once; every stored fact has its event."""
    events = assert_event_log_complete(job)
    job.refresh_from_db()
    types = Counter(e.type for e in events)
    completed = [e.payload["step"] for e in events if e.type == "step.completed"]
    assert len(completed) == len(set(completed)), f"a step completed twice: {completed}"
    done_steps = set(job.steps.filter(status=StepStatus.DONE).values_list("step_id", flat=True))
    assert set(completed) == done_steps, (completed, done_steps)
    added = [(e.payload["number"], e.payload["url"]) for e in events if e.type == "source.added"]
    numbers = [n for n, _ in added]
    assert sorted(numbers) == list(range(1, len(added) + 1)), f"source numbers: {numbers}"
    assert len({u for _, u in added}) == len(added), "a source was added twice"
    assert set(added) == set(Source.objects.filter(job=job).values_list("number", "url"))
    for once in ("job.done", "job.failed", "report.ready", "plan.accepted"):
        assert types[once] <= 1, f"{once} appears {types[once]} times"
    statuses = [e.payload["status"] for e in events if e.type == "job.status"]
    assert statuses and statuses[-1] == job.status, (statuses, job.status)
    terminal = [s for s in statuses if s in ("done", "failed", "cancelled")]
    assert terminal == [job.status] if job.is_terminal else not terminal, f"terminal statuses: {statuses}"
    return events


# --- fixtures (imported by tests/faults/conftest.py and tests/security/conftest.py) ---------------------


@pytest.fixture(scope="package")
def quiet_other_workers() -> Iterator[None]:
    """Stop the session's worker (its reaper would run this package's stranded steps); restart it after."""
    with other_workers_paused():
        yield


@pytest.fixture(scope="package")
def fault_redis() -> Iterator[RedisServer]:
    server = RedisServer(f"redis://127.0.0.1:{free_port()}/0").start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def fault_llm() -> Iterator[PeerFakeLLM]:
    server = PeerFakeLLM(Scenario(bogus_citation=False))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def fault_env(fault_redis, fault_llm, test_site) -> dict[str, str]:
    return base_env(
        REDIS_URL=fault_redis.url,
        SEARXNG_URL=test_site.url,
        SEARCH_PROVIDERS="searxng",
        LLM_BASE_URL=fault_llm.base_url,
        LLM_MODEL="test-model",
        LLM_PROFILE="qwen3",
        LLM_CONTEXT_WINDOW="32768",
        STEP_QUEUE_GRACE_S="10",
        WORKER_LOG_LEVEL="INFO",
    )


@pytest.fixture(scope="package")
def fault_broker(fault_redis) -> Iterator[str]:
    """Point this process's Celery app (services.job_create's sends) and channel layer at the stack's Redis
    (and back afterwards, with fresh pools: tests/support/brokers.py says why)."""
    layers = layers_pointed_at(fault_redis.url)
    with redis_clients_pointed_at(broker_url=fault_redis.url, channel_layers_setting=layers):
        yield fault_redis.url


@pytest.fixture
def stack(quiet_other_workers, fault_env, fault_broker, fault_llm, fault_redis) -> Iterator[Stack]:
    s = Stack(fault_env, fault_llm, fault_redis)
    try:
        yield s
    finally:
        s.close()
        assert not s.director.errors, s.director.errors
