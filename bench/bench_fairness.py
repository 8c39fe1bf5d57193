"""Fair share: a second user's one-step job behind one user's queue of heavy jobs (issue 34).

The `make run` shape (one worker × 4 slots) against the model double (bench/model_server.py). First the
second user's one-step job runs alone; then the first user creates `jobs` heavy jobs at once (k runs for
each of `steps` steps; 30 × 5 × 5 in the issue, where the one-step job then took 107 s instead of 1 s),
and a moment later the second user's one-step job is created again. Definitions:

- alone_s, behind_queue_s: that job's `finished_at - created`;
- slowdown = behind_queue_s / alone_s (the goal: ≤ 2);
- the caps are research/jobs/fairness.py's settings (FAIR_USER_RUNNING_JOBS, FAIR_USER_RUNNING_UNITS),
  on for this section only (the other sections measure one user's throughput, so they run without them).

The first user's jobs are cancelled at the end; how far they got is reported (`queue_progress`).
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench.bench_orchestration import job_timing
from bench.harness import QUESTIONS, Stack

CAPS = {"FAIR_USER_RUNNING_JOBS": "3", "FAIR_USER_RUNNING_UNITS": "4"}


def _other_user() -> Any:
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench-other", defaults={"email": "other@example.com"})
    return user


def _one_step_job(user: Any) -> int:
    from research.jobs import services

    job = services.job_create(user=user, question=QUESTIONS[1], options={
        "engine": "llm", "auto_accept": True, "max_steps": 1, "outputs": ["md"], "locale": "en-US"})
    return int(job.pk)


def _progress(job_ids: list[int]) -> dict[str, int]:
    from research.jobs.models import ResearchJob, StepRun

    statuses = list(ResearchJob.objects.filter(pk__in=job_ids).values_list("status", flat=True))
    return {"jobs": len(job_ids), "done": statuses.count("done"), "queued": statuses.count("queued"),
            "runs_done": StepRun.objects.filter(job_id__in=job_ids, status="done").count()}


def _measure(stack: Stack, caps: dict[str, str], *, jobs: int, steps: int, k: int, concurrency: int, ttft: float,
             tokens_per_s: float, warm: bool) -> dict[str, Any]:
    saved = {name: os.environ.get(name) for name in caps}
    os.environ.update(caps)
    stack.stop_workers()  # the workers read the caps at start
    try:
        stack.ensure_workers(count=1, concurrency=concurrency)
        if warm:
            stack.warm_up(steps=1)
        stack.set_latency(ttft=ttft, tokens_per_s=tokens_per_s)
        other = _other_user()
        alone = _one_step_job(other)
        stack.wait_jobs([alone], timeout=300)
        stack.require_done([alone])
        queue = [stack.create_job(QUESTIONS[i % len(QUESTIONS)], max_steps=steps, depth="heavy", runs=k)
                 for i in range(jobs)]
        time.sleep(1.0)  # the queue is in the broker before the other user's job arrives
        behind = _one_step_job(other)
        stack.wait_jobs([behind], timeout=1500)
        stack.require_done([behind])
        progress = _progress(queue)
        from research.jobs import services
        from research.jobs.models import ResearchJob

        for job in ResearchJob.objects.filter(pk__in=queue).exclude(status__in=["done", "failed", "cancelled"]):
            try:
                services.job_cancel(job=job)
            except services.InvalidAction:
                pass
        stack.wait_jobs(queue, timeout=900)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        stack.stop_workers()
    alone_s, behind_s = job_timing(alone)["wall_s"], job_timing(behind)["wall_s"]
    return {"alone_s": round(alone_s, 2), "behind_queue_s": round(behind_s, 2),
            "slowdown": round(behind_s / alone_s, 2), "queue_progress": progress}


def run(stack: Stack, *, jobs: int = 30, steps: int = 5, k: int = 5, concurrency: int = 4, ttft: float = 0.3,
        tokens_per_s: float = 200.0, warm: bool = True, compare: bool = False) -> dict[str, Any]:
    shape = {"jobs": jobs, "steps": steps, "k": k, "concurrency": concurrency, "ttft": ttft,
             "tokens_per_s": tokens_per_s, "warm": warm}
    result = _measure(stack, CAPS, **shape)
    result.update({"goal": 2.0, "queue": {"jobs": jobs, "steps": steps, "k": k, "runs": jobs * steps * k},
                   "workers": f"1 × {concurrency}", "caps": {name.lower(): int(v) for name, v in CAPS.items()},
                   "latency": {"ttft_s": ttft, "tokens_per_s": tokens_per_s}})
    if compare:  # the same without the caps: one FIFO queue, as before issue 34
        result["without_caps"] = _measure(stack, {name: "0" for name in CAPS}, **shape)
    return result


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    q = result["queue"]
    return [
        ("one-step job alone", f"{result['alone_s']:.2f} s"),
        (f"behind {q['jobs']} heavy jobs ({q['steps']} steps × k = {q['k']})", f"{result['behind_queue_s']:.2f} s"),
        ("fairness.slowdown", f"{result['slowdown']:.2f}× (goal ≤ {result['goal']:.0f}×)"),
        *([("without the caps (one FIFO queue)", f"{result['without_caps']['behind_queue_s']:.2f} s: "
                                                 f"{result['without_caps']['slowdown']:.2f}×")]
          if "without_caps" in result else []),
    ]
