"""Tokens per job against the number of steps: should grow linearly, not quadratically.

Jobs of 3, 6 and 12 independent research steps run against the model double (its tokenizer is
4 characters per token, the same for every run). A job's tokens are ResearchJob.prompt_tokens
and completion_tokens (the sum over its LLMCall rows). Linearity check: the marginal cost of a
step from 6 → 12 steps against 3 → 6 (1.0 = perfectly linear; a quadratic term makes it grow
with the number of steps; "linear" means ≤ 1.10), the growth exponent log(T12 / T3) / log 4 (≤ 1
for linear plus a fixed part, 2 for quadratic), and the exact fit T(n) = a + b·n + c·n² through
the three points with the share of the c·n² term at 12 steps.

`tokens_per_round`: the prompt tokens of every researcher round of one long step (12 rounds of search
and read, the scripted model against the real LLMClient and researcher node, in this process), next to
what the same rounds would have cost had each replayed the transcript (every earlier round's message
and tool results, as the researcher did before its IterResearch workspace). The task part is the same
every round; the report (the memory) and the last action's results share one fixed workspace budget
(research/agents/nodes/workspace.py). `round12_over_round2` is the flatness figure of issue 32 (goal
≤ 1.2). The stable keys come from the step as a user's settings run it, with the default workspace
budget (8,000 tokens, sized for real pages: report 2,000 + two 2,500-token pages and a listing). The
test site's pages are ~160 tokens, so that budget never fills here and compaction never runs:
`small_budget` repeats the step with a 1,000-token budget (the same shape, the results' share sized
to this site's largest action, one 8-hit listing of ~720 tokens) to show the budget binding, the
memory compacted and no source lost.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from bench.harness import QUESTIONS, Stack

SMALL_WORKSPACE = 1_000  # the budget of the `small_budget` re-run, where compaction runs (see the module doc)


def per_round(*, rounds: int = 12, small: int = SMALL_WORKSPACE) -> dict[str, Any]:
    """Prompt tokens per researcher round for one step of `rounds` rounds (see the module doc)."""
    out = _per_round(rounds, 0)
    compact = _per_round(rounds, small)
    out["small_budget"] = {key: compact[key] for key in (
        "workspace_token_cap", "prompt_tokens", "report_tokens", "round12_over_round2", "max_over_round2",
        "compactions", "sources", "sources_cited", "total")}
    return out


def _per_round(rounds: int, workspace: int) -> dict[str, Any]:
    from research.agents.engines.llm import LLMEngine
    from research.agents.types import Plan, PlanStep
    from research.llm.client import LLMClient
    from research.report.citations import citation_numbers
    from tests.support.fake_context import FakeContext, FakePage
    from tests.support.fake_llm import FakeLLM, prompt_tokens
    from tests.support.scenario import Scenario, agent_of
    from tests.support.site import PAGES

    step = PlanStep(id="s1", title="Solar power costs and prices", description="How solar power costs changed.")
    plan = Plan(locale="en-US", title=QUESTIONS[0], steps=[step])
    with FakeLLM(Scenario(research_rounds=rounds)) as fake:
        llm = LLMClient(base_url=fake.base_url, model=fake.model, profile="qwen3", timeout=30.0)
        try:
            pages = [FakePage(f"https://site.example{p.path}", p.title, p.text) for p in PAGES]
            options: dict[str, Any] = {"max_rounds": rounds + 2}
            if workspace:
                options["workspace_token_cap"] = workspace
            ctx = FakeContext(question=QUESTIONS[0], pages=pages, llm_client=llm, options=options)
            result = LLMEngine().research(ctx, step, plan, [])
        finally:
            llm.close()
        requests = [r for r in fake.requests if agent_of(r) == "researcher"]
    workspace = [prompt_tokens(r) for r in requests]
    # The old loop's round k: the task, then every earlier round's assistant message and tool results.
    replay: list[int] = []
    history: list[dict[str, Any]] = []
    for request in requests:
        history += request["messages"][2:]
        replay.append(prompt_tokens({**request, "messages": [*request["messages"][:2], *history]}))
    report = [len("".join(m.get("content") or "" for m in r["messages"] if m["role"] == "assistant")) // 4
              for r in requests]
    task = [prompt_tokens({**r, "messages": r["messages"][:2]}) for r in requests]
    second, twelfth = workspace[1], workspace[min(11, len(workspace) - 1)]
    return {
        "rounds": len(requests),
        "stopped": result.notes["stopped"],
        "workspace_token_cap": result.notes["workspace_tokens"],
        "compactions": result.notes["compactions"],
        "sources_cited": len(set(citation_numbers(result.report_md))),
        "sources": len(result.notes["sources"]),
        "prompt_tokens": workspace,
        "task_tokens": task,
        "report_tokens": report,
        "transcript_replay_tokens": replay,
        "last_over_third": round(workspace[-1] / workspace[2], 2) if len(workspace) > 2 else 0.0,
        # Round 12 (the last of the 12) against round 2, the first whose prompt holds an action's results.
        "round12_over_round2": round(twelfth / second, 3),
        "max_over_round2": round(max(workspace[1:]) / second, 3),
        "replay_last_over_third": round(replay[-1] / replay[2], 2) if len(replay) > 2 else 0.0,
        "total": sum(workspace),
        "replay_total": sum(replay),
    }


def run(stack: Stack, *, steps: tuple[int, ...] = (3, 6, 12), concurrency: int = 8) -> dict[str, Any]:
    from research.jobs.models import LLMCall, ResearchJob

    if stack.worker_config is None:
        stack.ensure_workers(count=1, concurrency=concurrency)
    stack.set_latency(ttft=0.0, tokens_per_s=0.0)  # token counts do not depend on latency
    ids = {n: stack.create_job(QUESTIONS[0], max_steps=n) for n in steps}
    stack.wait_jobs(list(ids.values()), timeout=600)
    stack.require_done(list(ids.values()))
    rows: list[dict[str, Any]] = []
    for n, job_id in ids.items():
        job = ResearchJob.objects.get(pk=job_id)
        by_agent: dict[str, int] = defaultdict(int)
        for agent, prompt, completion in LLMCall.objects.filter(job_id=job_id).values_list(
                "agent", "prompt_tokens", "completion_tokens"):
            by_agent[agent] += prompt + completion
        total = job.prompt_tokens + job.completion_tokens
        rows.append({"steps": n, "prompt_tokens": job.prompt_tokens, "completion_tokens": job.completion_tokens,
                     "total_tokens": total, "tokens_per_step": round(total / n, 1),
                     "llm_calls": LLMCall.objects.filter(job_id=job_id).count(),
                     "by_agent": dict(sorted(by_agent.items()))})
    out: dict[str, Any] = {"runs": rows}
    totals = {r["steps"]: r["total_tokens"] for r in rows}
    if {3, 6, 12} <= set(totals):
        low = (totals[6] - totals[3]) / 3
        high = (totals[12] - totals[6]) / 6
        out["marginal_per_step_3_6"] = round(low, 1)
        out["marginal_per_step_6_12"] = round(high, 1)
        out["marginal_ratio"] = round(high / low, 3) if low else 0.0
        out["growth_exponent"] = round(math.log(totals[12] / totals[3]) / math.log(4), 3)
        # T(n) = a + b·n + c·n² through the three points; c·n² is the part that grows quadratically.
        c = ((totals[12] - totals[6]) / 6 - (totals[6] - totals[3]) / 3) / 9
        b = (totals[6] - totals[3]) / 3 - 9 * c
        out["fit"] = {"a": round(totals[3] - 3 * b - 9 * c, 1), "b_per_step": round(b, 1), "c_per_step2": round(c, 2)}
        out["quadratic_share_at_12"] = round(c * 144 / totals[12], 3)
        out["linear"] = bool(low and high / low <= 1.10)
    out["tokens_per_round"] = per_round()
    return out


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    lines = [(f"{r['steps']} steps", f"{r['prompt_tokens']:,} prompt + {r['completion_tokens']:,} completion "
                                      f"= {r['total_tokens']:,} ({r['tokens_per_step']:,.0f}/step, "
                                      f"{r['llm_calls']} calls)") for r in result["runs"]]
    if "marginal_ratio" in result:
        lines.append(("growth", f"marginal/step {result['marginal_per_step_3_6']:,.0f} → "
                                f"{result['marginal_per_step_6_12']:,.0f} (ratio {result['marginal_ratio']:.2f}), "
                                f"exponent {result['growth_exponent']:.2f}; fit {result['fit']['b_per_step']:,.0f}·n + "
                                f"{result['fit']['c_per_step2']:,.0f}·n² "
                                f"(n² part {result['quadratic_share_at_12']:.0%} at 12): "
                                f"{'linear' if result['linear'] else 'super-linear'}"))
    per = result.get("tokens_per_round")
    if per:
        lines.append(("tokens/round", _rounds_text(per, task=True)))
        if per.get("small_budget"):
            lines.append(("small budget", _rounds_text(per["small_budget"])))
        lines.append(("replayed", " ".join(f"{n:,}" for n in per["transcript_replay_tokens"])
                      + f" (round {per['rounds']} / round 3 = {per['replay_last_over_third']:.2f}; "
                        f"step total {per['replay_total']:,} against {per['total']:,})"))
    return lines


def _rounds_text(run: dict[str, Any], *, task: bool = False) -> str:
    """One per-round run: its prompt tokens, the budget, the flatness figures, compactions, sources cited."""
    task_part = f"task part {min(run['task_tokens']):,}–{max(run['task_tokens']):,}; " if task else ""
    return (" ".join(f"{n:,}" for n in run["prompt_tokens"])
            + f" (workspace {run['workspace_token_cap']:,}: round 12 / round 2 = {run['round12_over_round2']:.2f}, "
              f"max / round 2 = {run['max_over_round2']:.2f}; {task_part}"
              f"{run['compactions']} compactions, {run['sources_cited']}/{run['sources']} sources cited)")
