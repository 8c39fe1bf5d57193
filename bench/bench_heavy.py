"""Heavy mode's cost: one plan run at standard depth and at heavy depth (k parallel runs per research step,
then one synthesis call per step), against the batching model double (bench/model_server.py).

Both jobs use the llm engine, the same question, the same number of steps and the same latency model, one
after the other on the same worker. Definitions:

- wall_s_*: the job's `finished_at - created`.
- wall_ratio_vs_standard = wall_s_heavy / wall_s_standard. The k runs of a step are separate Celery units
  that run at once, so with enough worker slots the ratio is what the model server's batching costs (k
  times the concurrent requests, each decoding a little slower) plus the synthesis call; the goal is ≤ 1.4
  for k = 3.
- total_tokens_*: prompt + completion tokens of every model call of the job (LLMCall rows).
- tokens_per_round: prompt tokens of each researcher call of run 0 of the heavy job's first step, in order
  (round 1, 2, …; the last entry is the step-report call; LLMCall.run tells the runs apart);
  tokens_per_round_standard: the same for the standard job's first step. Flat is the goal (IterResearch rebuilds a
  small workspace each round); growing means the conversation is replayed every round.

The batching model: n requests decoding at once each get tokens_per_s / (1 + batch_slowdown × (n − 1)).
"""

from __future__ import annotations

from typing import Any

from bench.bench_orchestration import _set_batching, job_timing
from bench.harness import QUESTIONS, Stack


def _tokens(job_id: int) -> dict[str, Any]:
    from research.jobs.models import LLMCall

    calls = list(LLMCall.objects.filter(job_id=job_id).order_by("created", "pk").values(
        "agent", "step_id", "prompt_tokens", "completion_tokens"))
    by_agent: dict[str, int] = {}
    for call in calls:
        by_agent[call["agent"]] = by_agent.get(call["agent"], 0) + call["prompt_tokens"] + call["completion_tokens"]
    return {"total": sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls), "calls": len(calls),
            "by_agent": dict(sorted(by_agent.items()))}


def _tokens_per_round(job_id: int, run: int | None = None) -> list[int]:
    """Prompt tokens of the researcher's calls for the job's first research step (of one of its runs in heavy
    mode), in call order."""
    from research.jobs.models import JobStep, LLMCall

    first = JobStep.objects.filter(job_id=job_id, step_type="research").order_by("position").first()
    if first is None:
        return []
    return list(LLMCall.objects.filter(job_id=job_id, step_id=first.step_id, agent="researcher", run=run)
                .order_by("created", "pk").values_list("prompt_tokens", flat=True))


def _synthesis_s(job_id: int) -> float:
    """Model seconds of the longest synthesis call (the steps merge at about the same time)."""
    from research.jobs.models import LLMCall

    return max(LLMCall.objects.filter(job_id=job_id, agent="synthesis").values_list("seconds", flat=True),
               default=0.0)


def run(stack: Stack, *, steps: int = 3, k: int = 3, ttft: float = 0.5, tokens_per_s: float = 50.0,
        think_words: int = 100, batch_slowdown: float = 0.1, warm: bool = True) -> dict[str, Any]:
    concurrency = steps * k + 2  # every run of every step at once, plus the scheduler's units
    stack.ensure_workers(count=1, concurrency=concurrency)
    if warm:
        stack.warm_up(steps=steps)
    stack.set_latency(ttft=ttft, tokens_per_s=tokens_per_s, think_words=think_words)
    _set_batching(stack, batch_slowdown)
    jobs: dict[str, int] = {}
    timing: dict[str, dict[str, Any]] = {}
    try:
        for label, depth in (("standard", {}), ("heavy", {"depth": "heavy", "runs": k})):
            job_id = stack.create_job(QUESTIONS[0], max_steps=steps, **depth)
            stack.wait_jobs([job_id], timeout=1200)
            stack.require_done([job_id])
            jobs[label] = job_id
            timing[label] = job_timing(job_id)
            stack.log(f"heavy bench {label}: {timing[label]['wall_s']:.2f}s wall")
    finally:
        _set_batching(stack, 0.0)
    std, heavy = timing["standard"], timing["heavy"]
    tokens_std, tokens_heavy = _tokens(jobs["standard"]), _tokens(jobs["heavy"])
    return {
        "k": k,
        "steps": steps,
        "wall_s_standard": round(std["wall_s"], 3),
        "wall_s_heavy": round(heavy["wall_s"], 3),
        "wall_ratio_vs_standard": round(heavy["wall_s"] / std["wall_s"], 3),
        "total_tokens_standard": tokens_std["total"],
        "total_tokens_heavy": tokens_heavy["total"],
        "token_ratio_vs_standard": round(tokens_heavy["total"] / max(1, tokens_std["total"]), 3),
        "tokens_per_round": _tokens_per_round(jobs["heavy"], run=0),
        "tokens_per_round_standard": _tokens_per_round(jobs["standard"]),
        # Where heavy's extra wall time goes: the research stage (k× the concurrent requests on a batching
        # server) and the synthesis call each step makes after its runs.
        "research_stage_s": {"standard": std["stages"]["research"]["wall_s"],
                             "heavy": heavy["stages"]["research"]["wall_s"]},
        "synthesis_call_s": round(_synthesis_s(jobs["heavy"]), 3),
        "tokens_by_agent": {"standard": tokens_std["by_agent"], "heavy": tokens_heavy["by_agent"]},
        "llm_calls": {"standard": tokens_std["calls"], "heavy": tokens_heavy["calls"]},
        "stages": {"standard": std["stages"], "heavy": heavy["stages"]},
        "latency_model": {**stack.latency, "batch_slowdown": batch_slowdown},
        "worker": {"count": 1, "concurrency": concurrency},
        "goals": {"wall_ratio_max": 1.4, "tokens_per_round": "flat"},
    }


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    lat = result["latency_model"]
    rounds = result["tokens_per_round"]
    return [
        ("workload", f"{result['steps']} research steps, k = {result['k']}; ttft {lat['ttft_s']} s, "
                     f"{lat['tokens_per_s']:g} tokens/s, batch slowdown {lat['batch_slowdown']:g}"),
        ("standard wall", f"{result['wall_s_standard']:.2f} s"),
        ("heavy wall", f"{result['wall_s_heavy']:.2f} s"),
        ("heavy / standard wall", f"{result['wall_ratio_vs_standard']:.2f}× (goal ≤ 1.4)"),
        ("total tokens", f"standard {result['total_tokens_standard']:,}, heavy {result['total_tokens_heavy']:,} "
                         f"({result['token_ratio_vs_standard']:.2f}×)"),
        ("research stage", f"standard {result['research_stage_s']['standard']:.2f} s, heavy "
                           f"{result['research_stage_s']['heavy']:.2f} s (of which a synthesis call "
                           f"{result['synthesis_call_s']:.2f} s)"),
        ("prompt tokens per researcher round", ", ".join(f"{n:,}" for n in rounds) or "-"),
    ]
