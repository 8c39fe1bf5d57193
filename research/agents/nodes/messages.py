"""Building blocks of the user messages the nodes send (system prompts are files: research/agents/prompts/)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from research.agents.clock import today_section
from research.agents.nodes.model import ChatModel, ToolCall, fit_texts, truncate_tokens
from research.agents.types import Plan, PlanStep, SourceRef, StepResult
from research.report.citations import citation_numbers


def task_head(question: str, locale: str) -> list[str]:
    """The sections every task message opens with. Today's date goes in the user turn, never the system
    prompt, so the system prefix stays identical across days and the server's prefix cache keeps serving it."""
    return [f"## Question\n{question.strip()}", f"## Locale\n{locale}", today_section()]


def sections(*parts: str) -> str:
    """Task sections joined by blank lines, empty ones left out."""
    return "\n\n".join(part for part in parts if part)


def plan_outline(plan: Plan, *, descriptions: bool = True) -> str:
    # Steps see the other steps by title only (their own description comes in the step block):
    # descriptions of every step on every turn made prompt tokens grow with steps squared.
    lines = [f"## Plan: {plan.title}"]
    for index, step in enumerate(plan.steps, start=1):
        deps = f" (uses {', '.join(step.depends_on)})" if step.depends_on else ""
        lines.append(f"{index}. [{step.id}] ({step.step_type}) {step.title}{deps}")
        if descriptions and step.description:
            lines.append(f"   {step.description}")
    return "\n".join(lines)


def step_block(step: PlanStep) -> str:
    return "\n".join(
        [
            "## Current step",
            f"id: {step.id}",
            f"title: {step.title}",
            f"type: {step.step_type}",
            f"description: {step.description or step.title}",
        ]
    )


def prior_block(llm: ChatModel, prior: Sequence[StepResult], budget: int) -> str:
    if not prior:
        return ""
    bodies = fit_texts(llm, [p.report_md for p in prior], budget)
    parts = ["## Results of earlier steps"]
    for result, body in zip(prior, bodies, strict=True):
        parts.append(f"### [{result.step_id}] {result.title}\n{body.strip()}")
        if result.figures:
            parts.append("Figures: " + ", ".join(result.figures))
    return "\n\n".join(parts)


def allowed_from_prior(prior: Sequence[StepResult], registered: set[int]) -> set[int]:
    """Citation numbers a step may keep from the results it builds on."""
    allowed: set[int] = set()
    for result in prior:
        allowed.update(n for n in result.notes.get("sources", []) if isinstance(n, int))
        allowed.update(citation_numbers(result.report_md))
    return allowed & registered


def source_listing(llm: ChatModel, ref: SourceRef, cap: int) -> str:
    kind = "Knowledge-base passage" if ref.kind == "kb" else "Source"
    body = truncate_tokens(llm, ref.text or "", cap) if ref.text else "(no text)"
    return f"{kind} [{ref.number}]: {ref.title}\nURL: {ref.url}\n\n{body}"


def call_id(call: ToolCall, round_no: int, index: int) -> str:
    return call.id or f"call_{round_no}_{index}"


def assistant_tool_message(content: str, calls: Sequence[ToolCall], round_no: int) -> dict[str, Any]:
    tool_calls = []
    for index, call in enumerate(calls):
        raw = call.raw_arguments or json.dumps(call.arguments or {}, ensure_ascii=False)
        tool_calls.append(
            {"id": call_id(call, round_no, index), "type": "function",
             "function": {"name": call.name, "arguments": raw}}
        )
    return {"role": "assistant", "content": content, "tool_calls": tool_calls}
