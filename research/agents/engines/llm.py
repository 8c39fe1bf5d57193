"""The LLM engine: the Engine protocol over the node modules in research/agents/nodes/.

Each node reads what it needs from the AgentContext, talks to the model through `ctx.llm` (a
nodes.model.ChatModel, in production research.llm.client.LLMClient) and returns typed state.
"""

from __future__ import annotations

from collections.abc import Callable

from research.agents.nodes import coder, coordinator, planner, reporter, researcher, scripts, synthesis
from research.agents.nodes.model import EngineError
from research.agents.types import (
    AgentContext,
    CoordinatorDecision,
    Plan,
    PlanStep,
    PodcastScript,
    RunVariant,
    SlideOutline,
    StepResult,
)

__all__ = ["EngineError", "LLMEngine"]


class LLMEngine:
    """Implements research.agents.types.Engine with a model behind ctx.llm."""

    name = "llm"

    def coordinate(self, ctx: AgentContext) -> CoordinatorDecision:
        return coordinator.coordinate(ctx)

    def plan(self, ctx: AgentContext, *, max_steps: int, background: str = "", feedback: str = "",
             previous: Plan | None = None) -> Plan:
        return planner.plan(ctx, max_steps=max_steps, background=background, feedback=feedback, previous=previous)

    def research(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *,
                 variant: RunVariant | None = None) -> StepResult:
        return researcher.research(ctx, step, plan, prior, variant=variant)

    def synthesize(self, ctx: AgentContext, step: PlanStep, plan: Plan, runs: list[StepResult]) -> StepResult:
        return synthesis.synthesize(ctx, step, plan, runs)

    def process(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult:
        return coder.process(ctx, step, plan, prior)

    def report(self, ctx: AgentContext, plan: Plan, results: list[StepResult], *, style: str,
               on_delta: Callable[[str], None]) -> str:
        return reporter.report(ctx, plan, results, style=style, on_delta=on_delta)

    def podcast_script(self, ctx: AgentContext, report_md: str) -> PodcastScript:
        return scripts.podcast_script(ctx, report_md)

    def slide_outline(self, ctx: AgentContext, report_md: str) -> SlideOutline:
        return scripts.slide_outline(ctx, report_md)
