"""Coordinator node: answer a greeting or refusal directly, or route the question to research; pick the locale."""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, Field

from research import textre
from research.agents.clock import today_section
from research.agents.nodes.model import StructuredOutputError, require_model
from research.agents.prompts import load_prompt
from research.agents.text import detect_locale
from research.agents.types import MAX_CLARIFY_QUESTIONS, AgentContext, CoordinatorDecision

logger = logging.getLogger(__name__)

LOCALE_TAG = textre.compile(r"^[a-z]{2,3}(-[A-Za-z]{2,4})?(-[A-Za-z]{2})?$")


class CoordinatorReply(BaseModel):
    """What the coordinator model returns (structured output)."""

    action: Literal["answer", "research", "clarify"]
    locale: str = ""
    answer: str = Field(default="", max_length=4000)
    questions: list[str] = Field(default_factory=list, max_length=3)  # clarify: up to 3 short questions


def coordinate(ctx: AgentContext) -> CoordinatorDecision:
    llm = require_model(ctx)
    question = ctx.question.strip()
    detected = detect_locale(question, default=ctx.locale or "en-US")
    forced = str(ctx.options.get("locale") or "").strip()
    if forced == "auto" or not LOCALE_TAG.match(forced):  # "auto": the question decides
        forced = ""
    # Clarify once: after the user answered (or skipped), the job goes on to planning.
    clarify_allowed = bool(ctx.options.get("clarify")) and "clarifications" not in ctx.options
    # Files were asked for, or the user pressed "Research it anyway": a report is expected.
    report_expected = (any(o != "md" for o in ctx.options.get("outputs", ["md"]))
                       or ctx.options.get("direct_answer") is False)
    messages = [
        {"role": "system", "content": load_prompt("coordinator", detected)},
        {
            "role": "user",
            "content": f"## Clarification allowed\n{'yes' if clarify_allowed else 'no'}\n\n"
                       f"## Report expected\n{'yes' if report_expected else 'no'}\n\n## Question\n{question}"
                       f"\n\n{today_section()}",  # in the user turn: the system prefix stays cacheable
        },
    ]
    try:
        reply = llm.structured(messages, CoordinatorReply, agent="coordinator", max_tokens=800)
    except StructuredOutputError as exc:
        # Routing to research is the safe default: a real question is never lost.
        logger.warning("coordinator output unusable (%s); routing to research", exc)
        return CoordinatorDecision("research", forced or detected)

    locale = forced or pick_locale(detected, reply.locale, question)
    answer = reply.answer.strip()
    if reply.action == "answer" and answer:
        return CoordinatorDecision("answer", locale, answer)
    questions = [q.strip() for q in reply.questions if q.strip()][:MAX_CLARIFY_QUESTIONS]
    if reply.action == "clarify" and clarify_allowed and (questions or answer):
        return CoordinatorDecision("clarify", locale, answer or questions[0], questions=questions or [answer])
    return CoordinatorDecision("research", locale)


def pick_locale(detected: str, proposed: str, question: str) -> str:
    # The script decides when it is unambiguous (CJK, kana, hangul); otherwise the
    # model may refine the default (e.g. a German question → de-DE).
    if detect_locale(question, default="") or not proposed:
        return detected
    proposed = proposed.strip().replace("_", "-")
    return proposed if LOCALE_TAG.match(proposed) else detected
