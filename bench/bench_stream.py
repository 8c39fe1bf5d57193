"""Live-stream latency: from the moment a worker emits an event to its receipt by a WebSocket client.

N jobs run at once, each watched by its own WebSocket client (one asyncio loop in this process,
against daphne). Emit time is the event's `ts` (JobEvent.created, taken by the worker inside the
transaction that writes it); receipt time is time.time() when the client has parsed the message.
Both clocks are this machine's, so the difference is the whole path: commit, publish to Redis,
the Channels group, daphne, the socket and the client.

Only live events count: the jobs are created without auto-accept, so they stop at plan review;
the clients subscribe after the last stored event, and only then are the plans accepted. From that
moment every event (steps, activities, sources, report deltas, job.done) travels live.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

from bench.harness import QUESTIONS, Stack, percentile


def _accept_plans(job_ids: list[int]) -> None:
    from research.agents.types import Plan
    from research.jobs import services
    from research.jobs.models import ResearchJob

    for job_id in job_ids:
        job = ResearchJob.objects.get(pk=job_id)
        version = job.plan_versions.order_by("-number").first()
        assert version is not None
        services.plan_submit(job=job, plan=Plan.model_validate(version.plan), base_version=version.number,
                             action="accept")


async def _watch(url: str, origin: str, cookie: str, after: int, subscribed: asyncio.Event, ready: list[int],
                 total: int, timeout: float) -> list[tuple[float, dict[str, Any]]]:
    import websockets
    from websockets.typing import Origin

    got: list[tuple[float, dict[str, Any]]] = []
    async with websockets.connect(url, origin=Origin(origin), additional_headers={"Cookie": f"sessionid={cookie}"},
                                  max_size=2**24) as ws:
        await ws.send(json.dumps({"type": "subscribe", "after": after}))
        ready.append(1)
        if len(ready) == total:
            subscribed.set()
        deadline = time.monotonic() + timeout
        while True:
            raw = await asyncio.wait_for(ws.recv(), timeout=max(1.0, deadline - time.monotonic()))
            received = time.time()
            message = json.loads(raw)
            got.append((received, message))
            if message.get("type") in ("job.done", "job.failed"):
                return got


def run(stack: Stack, *, jobs: int = 20, steps: int = 3, ttft: float = 0.5, tokens_per_s: float = 50.0,
        workers: int = 2, concurrency: int = 12, warm: bool = True, timeout: float = 600,
        raw: list[tuple[int, int, str, float, float]] | None = None) -> dict[str, Any]:
    """`raw`, when given, receives (job, seq, type, emitted, received) for every live message."""
    from research.jobs.models import ResearchJob

    stack.ensure_workers(count=workers, concurrency=concurrency)
    asgi = stack.ensure_asgi()
    if warm:  # long-running workers have imported and initialised everything; a fresh one has not
        stack.warm_up(steps=6, jobs=max(1, workers * concurrency // 6))
    stack.set_latency(ttft=ttft, tokens_per_s=tokens_per_s)
    cookie = stack.session_cookie()
    ids = [stack.create_job(QUESTIONS[i % len(QUESTIONS)], max_steps=steps, auto_accept=False) for i in range(jobs)]
    stack.wait_jobs(ids, statuses=("awaiting_review", "failed"), timeout=timeout)
    after = dict(ResearchJob.objects.filter(pk__in=ids).values_list("pk", "event_seq"))
    ws_base = asgi.url.replace("http", "ws")

    async def main() -> tuple[list[list[tuple[float, dict[str, Any]]]], float]:
        subscribed = asyncio.Event()
        ready: list[int] = []
        watchers = [asyncio.create_task(_watch(f"{ws_base}/ws/jobs/{pk}/", asgi.url, cookie, after[pk], subscribed,
                                               ready, len(ids), timeout)) for pk in ids]
        await asyncio.wait_for(subscribed.wait(), timeout=60)
        await asyncio.sleep(0.5)  # let daphne process every subscribe before anything new is emitted
        started = time.monotonic()
        await asyncio.to_thread(_accept_plans, ids)
        results = await asyncio.gather(*watchers)
        return list(results), time.monotonic() - started

    per_job, elapsed = asyncio.run(main())
    stack.require_done(ids)
    latencies: list[float] = []
    by_type: dict[str, list[float]] = {}
    gaps = 0
    for pk, messages in zip(ids, per_job, strict=True):
        seqs = [m["seq"] for _, m in messages]
        if seqs != list(range(after[pk] + 1, after[pk] + 1 + len(seqs))):
            gaps += 1
        for received, message in messages:
            ms = (received - float(message["ts"])) * 1000.0
            latencies.append(ms)
            if raw is not None:
                raw.append((pk, int(message["seq"]), str(message["type"]), float(message["ts"]), received))
            by_type.setdefault(message["type"], []).append(ms)
    counts = Counter({k: len(v) for k, v in by_type.items()})
    return {
        "events": len(latencies),
        "jobs": jobs,
        "p50_ms": round(percentile(latencies, 50), 2),
        "p90_ms": round(percentile(latencies, 90), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "max_ms": round(max(latencies, default=0.0), 2),
        "events_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
        "jobs_with_gaps": gaps,
        "by_type_p99_ms": {k: round(percentile(v, 99), 2) for k, v in sorted(by_type.items())},
        "by_type_count": dict(sorted(counts.items())),
        "steps_per_job": steps,
        "latency_model": dict(stack.latency),
        "workers": {"count": workers, "concurrency": concurrency},
        "goals": {"p99_ms_max": 50.0},
    }


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("workload", f"{result['jobs']} concurrent jobs × {result['steps_per_job']} steps, "
                     f"{result['workers']['count']} workers × {result['workers']['concurrency']}"),
        ("live events received", f"{result['events']} ({result['events_per_s']}/s), "
                                 f"{result['jobs_with_gaps']} jobs with gaps"),
        ("emit → WebSocket p50", f"{result['p50_ms']:.1f} ms"),
        ("emit → WebSocket p99", f"{result['p99_ms']:.1f} ms (goal ≤ 50; max {result['max_ms']:.1f})"),
    ]
