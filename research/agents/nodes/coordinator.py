"""Coordinator node: answer a greeting or refusal directly, or route the question to research; pick the locale."""

from __future__ import annotations

import logging
import re
from typing import Literal

from pydantic import BaseModel, Field

from research.agents.nodes.model import StructuredOutputError, require_model
from research.agents.prompts import load_prompt
from research.agents.text import detect_locale
from research.agents.types import AgentContext, CoordinatorDecision

logger = logging.getLogger(__name__)

LOCALE_TAG = re.compile(r"^[a-z]{2,3}(-[A-Za-z]{2,4})?(-[A-Za-z]{2})?$")


class CoordinatorReply(BaseModel):
    """What the coordinator model returns (structured output)."""

    action: Literal["answer", "research", "clarify"]
    locale: str = ""
    answer: str = Field(default="", max_length=4000)


def coordinate(ctx: AgentContext) -> CoordinatorDecision:
    llm = require_model(ctx)
    question = ctx.question.strip()
    detected = detect_locale(question, default=ctx.locale or "en-US")
    forced = str(ctx.options.get("locale") or "").strip()
    if forced == "auto" or not LOCALE_TAG.match(forced):  # "auto": the question decides
        forced = ""
    clarify_allowed = bool(ctx.options.get("clarify"))
    messages = [
        {"role": "system", "content": load_prompt("coordinator", detected)},
        {
            "role": "user",
            "content": f"## Clarification allowed\n{'yes' if clarify_allowed else 'no'}\n\n## Question\n{question}",
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
    if reply.action == "clarify" and clarify_allowed and answer:
        return CoordinatorDecision("clarify", locale, answer)
    return CoordinatorDecision("research", locale)


def pick_locale(detected: str, proposed: str, question: str) -> str:
    # The script decides when it is unambiguous (CJK, kana, hangul); otherwise the
    # model may refine the default (e.g. a German question → de-DE).
    if detect_locale(question, default="") or not proposed:
        return detected
    proposed = proposed.strip().replace("_", "-")
    return proposed if LOCALE_TAG.match(proposed) else detected
