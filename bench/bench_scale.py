"""Scale: jobs per minute with one Celery worker and with two, and the workers' peak memory.

The same batch of jobs (each N research steps, the llm engine against the model double with its
latency model) is submitted at once, first to one worker, then to two; throughput is
jobs / (last finished_at - first created) × 60. Each worker has the same number of pool
processes, so two workers have twice the slots. Memory is the resident set of each worker's
whole process tree (parent + pool children), sampled with psutil while the batch runs.

Two workloads: Markdown-only jobs (bound by model latency, i.e. I/O: more slots help) and whole jobs
with all four outputs (PDF, PPTX with slide thumbnails, podcast: the renders are CPU-bound, so on one
host more workers than cores cannot help them).
"""

from __future__ import annotations

import time
from typing import Any

from bench.harness import QUESTIONS, RssSampler, Stack, ts

WHOLE = ("md", "pdf", "pptx", "podcast")


def _batch(stack: Stack, *, workers: int, concurrency: int, jobs: int, steps: int, ttft: float,
           tokens_per_s: float, think_words: int, warm: bool, outputs: tuple[str, ...] = ("md",)) -> dict[str, Any]:
    from research.jobs.models import ResearchJob

    pool = stack.ensure_workers(count=workers, concurrency=concurrency)
    if warm:
        stack.warm_up(steps=steps, jobs=max(1, workers * concurrency // max(1, steps)))
    stack.set_latency(ttft=ttft, tokens_per_s=tokens_per_s, think_words=think_words)
    with RssSampler([w.proc.pid for w in pool]) as rss:
        started = time.monotonic()
        ids = [stack.create_job(QUESTIONS[i % len(QUESTIONS)], max_steps=steps, outputs=outputs)
               for i in range(jobs)]
        stack.wait_jobs(ids, timeout=900)
        elapsed = time.monotonic() - started
    stack.require_done(ids)
    rows = list(ResearchJob.objects.filter(pk__in=ids).values("created", "finished_at"))
    span = max(ts(r["finished_at"]) for r in rows) - min(ts(r["created"]) for r in rows)
    walls = sorted(ts(r["finished_at"]) - ts(r["created"]) for r in rows)
    result = {
        "outputs": list(outputs),
        "workers": workers,
        "concurrency": concurrency,
        "jobs": jobs,
        "span_s": round(span, 3),
        "jobs_per_min": round(jobs / span * 60, 2),
        "job_wall_median_s": round(walls[len(walls) // 2], 3),
        "peak_worker_rss_mb": round(rss.peak_tree_mb, 1),
        "peak_total_rss_mb": round(rss.peak_total_mb, 1),
        "peak_process_rss_mb": round(rss.peak_process_mb, 1),
        "peak_worker_pss_mb": round(rss.peak_tree_pss_mb, 1),
    }
    stack.log(f"scale {'+'.join(outputs)}, {workers} worker(s): {result['jobs_per_min']} jobs/min in {elapsed:.1f}s, "
              f"peak worker RSS {result['peak_worker_rss_mb']} MB")
    return result


def run(stack: Stack, *, jobs: int = 12, steps: int = 3, concurrency: int = 4, ttft: float = 0.5,
        tokens_per_s: float = 50.0, think_words: int = 0, warm: bool = True, whole_jobs: int = 6,
        whole_outputs: tuple[str, ...] = WHOLE) -> dict[str, Any]:
    one = _batch(stack, workers=1, concurrency=concurrency, jobs=jobs, steps=steps, ttft=ttft,
                 tokens_per_s=tokens_per_s, think_words=think_words, warm=warm)
    two = _batch(stack, workers=2, concurrency=concurrency, jobs=jobs, steps=steps, ttft=ttft,
                 tokens_per_s=tokens_per_s, think_words=think_words, warm=warm)
    whole: dict[str, Any] = {}
    if whole_jobs:
        w1, w2 = (_batch(stack, workers=n, concurrency=concurrency, jobs=whole_jobs, steps=steps, ttft=ttft,
                         tokens_per_s=tokens_per_s, think_words=think_words, warm=warm, outputs=tuple(whole_outputs))
                  for n in (1, 2))
        # The same whole jobs against an instant model: nothing to wait for, so the jobs are CPU-bound
        # (renders: WeasyPrint, LibreOffice, espeak-ng, ffmpeg; and the agents' own parsing).
        c1, c2 = (_batch(stack, workers=n, concurrency=concurrency, jobs=whole_jobs, steps=steps, ttft=0.0,
                         tokens_per_s=0.0, think_words=0, warm=False, outputs=tuple(whole_outputs))
                  for n in (1, 2))
        whole = {"jobs": whole_jobs, "outputs": list(whole_outputs), "jobs_per_min_1_worker": w1["jobs_per_min"],
                 "jobs_per_min_2_workers": w2["jobs_per_min"],
                 "ratio": round(w2["jobs_per_min"] / w1["jobs_per_min"], 3), "runs": [w1, w2],
                 "cpu_bound": {"jobs_per_min_1_worker": c1["jobs_per_min"],
                               "jobs_per_min_2_workers": c2["jobs_per_min"],
                               "ratio": round(c2["jobs_per_min"] / c1["jobs_per_min"], 3), "runs": [c1, c2]}}
        stack.set_latency(ttft=ttft, tokens_per_s=tokens_per_s, think_words=think_words)
    return {
        "jobs": jobs,
        "steps_per_job": steps,
        "concurrency_per_worker": concurrency,
        "jobs_per_min_1_worker": one["jobs_per_min"],
        "jobs_per_min_2_workers": two["jobs_per_min"],
        "ratio": round(two["jobs_per_min"] / one["jobs_per_min"], 3),
        "peak_worker_rss_mb": max(one["peak_worker_rss_mb"], two["peak_worker_rss_mb"]),
        "peak_process_rss_mb": max(one["peak_process_rss_mb"], two["peak_process_rss_mb"]),
        "peak_worker_pss_mb": max(one["peak_worker_pss_mb"], two["peak_worker_pss_mb"]),
        "latency_model": dict(stack.latency),
        "runs": [one, two],
        "whole_jobs": whole,
    }


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    one, two = result["runs"]
    return [
        ("workload", f"{result['jobs']} jobs × {result['steps_per_job']} steps at once; "
                     f"{result['concurrency_per_worker']} processes per worker"),
        ("1 worker", f"{result['jobs_per_min_1_worker']:.1f} jobs/min (median job {one['job_wall_median_s']:.1f} s)"),
        ("2 workers", f"{result['jobs_per_min_2_workers']:.1f} jobs/min (median job {two['job_wall_median_s']:.1f} s)"),
        ("2 / 1 ratio", f"{result['ratio']:.2f}×"),
        *_whole_rows(result.get("whole_jobs") or {}),
        ("peak worker RSS", f"{result['peak_worker_rss_mb']:.0f} MB per worker (parent + "
                            f"{result['concurrency_per_worker']} children; PSS {result['peak_worker_pss_mb']:.0f} MB); "
                            f"largest process {result['peak_process_rss_mb']:.0f} MB"),
    ]


def _whole_rows(whole: dict[str, Any]) -> list[tuple[str, str]]:
    if not whole:
        return []
    w1, w2 = whole["runs"]
    cpu = whole["cpu_bound"]
    c1, c2 = cpu["runs"]
    label = "+".join(whole["outputs"])
    return [
        ("whole jobs", f"{whole['jobs']} jobs with {label} at once"),
        ("  1 worker", f"{whole['jobs_per_min_1_worker']:.1f} jobs/min (median job {w1['job_wall_median_s']:.1f} s)"),
        ("  2 workers", f"{whole['jobs_per_min_2_workers']:.1f} jobs/min (median job {w2['job_wall_median_s']:.1f} s)"),
        ("  2 / 1 ratio", f"{whole['ratio']:.2f}× (the model's latency still dominates: I/O-bound)"),
        ("whole jobs, instant model", "the same jobs with nothing to wait for: CPU-bound"),
        ("  1 worker", f"{cpu['jobs_per_min_1_worker']:.1f} jobs/min (median job {c1['job_wall_median_s']:.1f} s)"),
        ("  2 workers", f"{cpu['jobs_per_min_2_workers']:.1f} jobs/min (median job {c2['job_wall_median_s']:.1f} s)"),
        ("  2 / 1 ratio", f"{cpu['ratio']:.2f}× (one host's 2 cores are the limit, not the workers)"),
    ]
