"""Planner node: a plan of research and processing steps for the question (re-plan with the user's feedback)."""

from __future__ import annotations

from research.agents.graph import normalize_plan
from research.agents.nodes.messages import task_head
from research.agents.nodes.model import EngineError, StructuredOutputError, require_model, truncate_tokens
from research.agents.prompts import load_prompt
from research.agents.text import detect_locale
from research.agents.types import AgentContext, Plan, PlanStep, clarifications_text


def plan(
    ctx: AgentContext,
    *,
    max_steps: int,
    background: str = "",
    feedback: str = "",
    previous: Plan | None = None,
) -> Plan:
    llm = require_model(ctx)
    locale = ctx.locale or detect_locale(ctx.question)
    max_steps = max(1, int(max_steps))
    parts = [*task_head(ctx.question, locale), f"## Maximum number of steps\n{max_steps}"]
    if background.strip():
        fitted = truncate_tokens(llm, background.strip(), max(500, llm.context_window() // 4))
        parts.append(f"## Background (quick search results)\n{fitted}")
    if clarified := clarifications_text(ctx.options):
        parts.append(clarified + "\nPlan for what these answers ask for.")
    if previous is not None:
        parts.append("## Previous plan\n```json\n" + previous.model_dump_json(indent=2) + "\n```")
    if feedback.strip():
        parts.append(f"## User feedback on the previous plan\n{feedback}")
        parts.append("Revise the plan so that it follows this feedback.")
    messages = [
        {"role": "system", "content": load_prompt("planner", locale)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    try:
        result = llm.structured(messages, Plan, agent="planner", max_attempts=3)
    except StructuredOutputError as exc:
        raise EngineError(f"The planner could not produce a valid plan after several attempts: {exc}") from exc

    result = normalize_plan(result, max_steps=max_steps, locale=locale)
    if not result.steps:
        # An empty plan is useless to the research team; research the question itself.
        title = ctx.question.strip()[:300] or result.title
        result = result.model_copy(update={"steps": [PlanStep(id="s1", title=title, description=title)]})
    return result
