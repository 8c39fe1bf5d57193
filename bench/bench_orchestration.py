"""Orchestration efficiency: one plan of N independent research steps, run sequentially and in parallel.

Both runs use the llm engine against the model double, so every model call costs real latency
(time to first token + words / tokens_per_s). Definitions:

- wall: the job's `finished_at - created` (from the user's submit to job.done).
- model time of a unit: the sum of its LLMCall.seconds (what the client measured per request).
- critical_path_s: model time along the job's critical path, measured in the parallel run:
  coordinator + planner + the longest step (its researcher calls) + reporter. No schedule can
  finish the job faster than this; it is the physical limit.
- parallel_speedup = sequential_wall_s / parallel_wall_s (step_concurrency 1 vs unlimited).
- overhead_ratio = parallel_wall_s / critical_path_s (1.0 = no time lost to orchestration, tools,
  queues or the database).
- ideal_speedup = the sequential run's total model time / critical_path_s: the best any
  scheduler could do on this workload.

With ``batch_slowdown`` = 0 every request decodes at full speed however many run at once, so the
speedup measures orchestration overhead only. With ``batch_slowdown`` > 0 the double is a batching
model (per-request decode speed falls as concurrent requests rise, as on a GPU), so parallel steps
each run slower and the speedup is what a real server would give.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from bench.harness import QUESTIONS, Stack, ts


def job_timing(job_id: int) -> dict[str, Any]:
    """Wall time, model time per unit and a stage-by-stage breakdown of one finished job."""
    from research.jobs.models import JobEvent, JobStep, LLMCall, ResearchJob

    job = ResearchJob.objects.get(pk=job_id)
    calls = list(LLMCall.objects.filter(job_id=job_id).values("agent", "step_id", "seconds"))
    by_agent: dict[str, float] = defaultdict(float)
    by_step: dict[str, float] = defaultdict(float)
    for call in calls:
        if call["step_id"]:
            by_step[call["step_id"]] += call["seconds"]
        else:
            by_agent[call["agent"]] += call["seconds"]
    longest = max(by_step.values(), default=0.0)
    critical = by_agent["coordinator"] + by_agent["planner"] + longest + by_agent["reporter"]
    events = list(JobEvent.objects.filter(job_id=job_id).order_by("seq").values("type", "payload", "created"))

    def first(kind: str, **match: Any) -> float:
        for e in events:
            if e["type"] == kind and all(e["payload"].get(k) == v for k, v in match.items()):
                return ts(e["created"])
        return 0.0

    def last(kind: str) -> float:
        return max((ts(e["created"]) for e in events if e["type"] == kind), default=0.0)

    created, finished = ts(job.created), ts(job.finished_at)
    t_coord = first("job.status", status="coordinating")
    t_accepted = first("plan.accepted")
    t_last_step = last("step.completed")
    t_report = first("report.started")
    t_ready = first("report.ready")
    queued_at: dict[str, float] = {}
    dispatch: list[float] = []
    for e in events:
        step = e["payload"].get("step")
        if e["type"] == "step.queued":
            queued_at[step] = ts(e["created"])
        elif e["type"] == "step.started" and step in queued_at:
            dispatch.append(ts(e["created"]) - queued_at.pop(step))
    steps = list(JobStep.objects.filter(job_id=job_id).values("step_id", "started_at", "finished_at"))
    step_walls = {s["step_id"]: ts(s["finished_at"]) - ts(s["started_at"]) for s in steps}
    crit_step = max(by_step, key=lambda k: by_step[k]) if by_step else ""
    stages = {
        # wall seconds of each stage, and the model seconds inside it (along the critical path)
        "queue_to_coordinator": {"wall_s": t_coord - created, "model_s": 0.0},
        "coordinate_and_plan": {"wall_s": t_accepted - t_coord,
                                "model_s": by_agent["coordinator"] + by_agent["planner"]},
        "research": {"wall_s": t_last_step - t_accepted, "model_s": longest},
        "handoff_to_reporter": {"wall_s": t_report - t_last_step, "model_s": 0.0},
        "report": {"wall_s": t_ready - t_report, "model_s": by_agent["reporter"]},
        "finish": {"wall_s": finished - t_ready, "model_s": 0.0},
    }
    return {
        "job": job_id,
        "status": job.status,
        "wall_s": finished - created,
        "critical_path_s": critical,
        "model_total_s": sum(c["seconds"] for c in calls),
        "llm_calls": len(calls),
        "by_agent_s": {k: round(v, 3) for k, v in sorted(by_agent.items())},
        "longest_step_model_s": longest,
        "critical_step": crit_step,
        "critical_step_wall_s": step_walls.get(crit_step, 0.0),
        "step_dispatch_max_s": max(dispatch, default=0.0),
        "step_dispatch_mean_s": sum(dispatch) / len(dispatch) if dispatch else 0.0,
        "stages": {k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in stages.items()},
    }


def _set_batching(stack: Stack, slowdown: float) -> None:
    assert stack.model is not None and stack.model.stdin is not None and stack.model.stdout is not None
    stack.model.stdin.write(json.dumps({"batch_slowdown": slowdown}) + "\n")
    stack.model.stdin.flush()
    answer = json.loads(stack.model.stdout.readline())
    assert answer.get("ok") and answer.get("batch_slowdown") == slowdown, answer


def run(stack: Stack, *, steps: int = 6, ttft: float = 0.5, tokens_per_s: float = 50.0, think_words: int = 0,
        concurrency: int = 8, warm: bool = True, batch_slowdown: float = 0.0) -> dict[str, Any]:
    stack.ensure_workers(count=1, concurrency=max(concurrency, steps + 1))
    if warm:
        stack.warm_up(steps=steps)
    stack.set_latency(ttft=ttft, tokens_per_s=tokens_per_s, think_words=think_words)
    _set_batching(stack, batch_slowdown)
    runs: dict[str, dict[str, Any]] = {}
    try:
        for label, limit in (("sequential", 1), ("parallel", 0)):
            job_id = stack.create_job(QUESTIONS[0], max_steps=steps, step_concurrency=limit)
            stack.wait_jobs([job_id], timeout=900)
            stack.require_done([job_id])
            runs[label] = job_timing(job_id)
            stack.log(f"orchestration {label}: {runs[label]['wall_s']:.2f}s wall, "
                      f"{runs[label]['critical_path_s']:.2f}s critical path")
    finally:
        _set_batching(stack, 0.0)
    seq, par = runs["sequential"], runs["parallel"]
    critical = par["critical_path_s"]
    return {
        "steps": steps,
        "critical_path_s": round(critical, 3),
        "parallel_wall_s": round(par["wall_s"], 3),
        "sequential_wall_s": round(seq["wall_s"], 3),
        "parallel_speedup": round(seq["wall_s"] / par["wall_s"], 3),
        "overhead_ratio": round(par["wall_s"] / critical, 3),
        "ideal_speedup": round(seq["model_total_s"] / critical, 3),
        "sequential_model_s": round(seq["model_total_s"], 3),
        "latency_model": {**stack.latency, "batch_slowdown": batch_slowdown},
        "worker": {"count": 1, "concurrency": max(concurrency, steps + 1)},
        "runs": {k: {kk: (round(vv, 3) if isinstance(vv, float) else vv) for kk, vv in v.items()}
                 for k, v in runs.items()},
        "goals": {"parallel_speedup_min": 3.0, "overhead_ratio_max": 1.10},
    }


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    lat = result["latency_model"]
    return [
        ("workload", f"{result['steps']} independent research steps; ttft {lat['ttft_s']} s, "
                     f"{lat['tokens_per_s']:g} tokens/s, {lat['think_words']} thinking words/turn, "
                     f"batch slowdown {lat.get('batch_slowdown', 0.0):g}"),
        ("critical path (model time)", f"{result['critical_path_s']:.2f} s"),
        ("parallel wall", f"{result['parallel_wall_s']:.2f} s"),
        ("sequential wall (DeerFlow-style)", f"{result['sequential_wall_s']:.2f} s"),
        ("parallel speedup", f"{result['parallel_speedup']:.2f}× (ideal {result['ideal_speedup']:.2f}×, goal ≥ 3)"),
        ("overhead ratio", f"{result['overhead_ratio']:.3f} (goal ≤ 1.10)"),
    ]
