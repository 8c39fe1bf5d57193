"""Load: many jobs on few workers, many watchers on one job. Every job ends and every log is whole."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from research.jobs import services
from research.jobs.models import JobEvent, JobStatus, ResearchJob
from tests.faults.stack import QUESTION, check_event_log, wait_until
from tests.support.scenario import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

JOBS = 50
WATCHERS = 100


def test_50_concurrent_jobs_on_2_workers_all_finish_with_complete_logs(stack, alice):
    stack.director.scenario = Scenario(latency_s=0.05, bogus_citation=False)  # model latency on every call
    stack.llm.ttft = 0.02
    # Realistic leases: under this load SQLite write locks may delay a renewal by a second or two.
    env = {"STEP_LEASE_S": 15, "STEP_QUEUE_GRACE_S": 120}
    stack.beat(**env)
    workers = [stack.worker(concurrency=4, **env), stack.worker(concurrency=4, **env)]
    started = time.monotonic()
    jobs = [services.job_create(user=alice, question=f"{QUESTION} (case {i})",
                                options={"engine": "llm", "auto_accept": True, "max_steps": 2, "outputs": ["md"]})
            for i in range(JOBS)]
    ids = [j.pk for j in jobs]

    def all_ended() -> bool:
        return ResearchJob.objects.filter(pk__in=ids, status__in=["done", "failed", "cancelled"]).count() == JOBS

    wait_until(all_ended, timeout=240, what=f"{JOBS} jobs to end", stack=stack)
    elapsed = time.monotonic() - started
    statuses = dict(ResearchJob.objects.filter(pk__in=ids).values_list("pk", "status"))
    assert set(statuses.values()) == {JobStatus.DONE}, statuses
    events = 0
    for job in ResearchJob.objects.filter(pk__in=ids):
        log = check_event_log(job)
        events += len(log)
        assert [e.type for e in log].count("step.completed") == 2
        assert job.report_versions.count() == 1
        assert list(job.steps.values_list("attempts", flat=True)) == [1, 1], "a step ran twice"
    served = {w.name for w in workers if "research.jobs.tasks.step_run" in w.log.read_text(errors="replace")}
    assert len(served) == 2, "both workers should have run steps"
    print(f"\n{JOBS} jobs on 2 workers x 4: {elapsed:.1f} s, {events} events, {events / elapsed:.0f} events/s")


def test_100_websocket_watchers_each_receive_every_event(stack, alice, client):
    stack.beat()
    stack.worker(concurrency=4)
    web = stack.web()
    client.force_login(alice)
    cookie = client.cookies["sessionid"].value
    coordinating = stack.director.gate("coordinator")  # hold the job until every watcher is subscribed
    job = services.job_create(user=alice, question=QUESTION,
                              options={"engine": "llm", "auto_accept": True, "max_steps": 2, "outputs": ["md"]})
    coordinating.wait_arrival()
    url = web.url.replace("http", "ws") + f"/ws/jobs/{job.pk}/"
    subscribed = asyncio.Event()
    ready = 0

    async def watch() -> list[dict]:
        nonlocal ready
        got: list[dict] = []
        async with websockets.connect(url, origin=web.url, open_timeout=30,
                                      additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:
            await ws.send(json.dumps({"type": "subscribe", "after": 0}))
            first = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
            got.append(first)
            ready += 1
            if ready == WATCHERS:
                subscribed.set()
            while True:
                msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=90))
                got.append(msg)
                if msg["type"] in ("job.done", "job.failed"):
                    return got

    async def main() -> list[list[dict]]:
        tasks = [asyncio.create_task(watch()) for _ in range(WATCHERS)]
        await asyncio.wait_for(subscribed.wait(), timeout=60)
        coordinating.open()
        return await asyncio.gather(*tasks)

    results = asyncio.run(main())
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    stored = [e.as_message() for e in JobEvent.objects.filter(job=job).order_by("seq")]
    assert len(stored) > 20
    expected = [(m["seq"], m["type"], m["payload"]) for m in stored]
    for got in results:
        assert [(m["seq"], m["type"], m["payload"]) for m in got] == expected
    check_event_log(job)
