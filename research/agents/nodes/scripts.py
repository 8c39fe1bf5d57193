"""Script nodes: the podcast script and the slide outline, written from the finished report.

If the model's output is unusable, each falls back to one derived from the report itself
(research.render.derive), so an output never fails for want of a script.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from research.agents.nodes.model import ANSWER_RESERVE, ChatModel, StructuredOutputError, require_model, truncate_tokens
from research.agents.prompts import load_prompt
from research.agents.text import detect_locale
from research.agents.types import AgentContext, PodcastScript, SlideOutline
from research.report.citations import FIGURE_REF

logger = logging.getLogger(__name__)


def podcast_script(ctx: AgentContext, report_md: str) -> PodcastScript:
    from research.render.derive import script_from_model  # repaired before TTS, or derived from the report

    llm = require_model(ctx)
    locale = detect_locale(report_md[:4000], default=ctx.locale or "en-US")
    messages = _messages(llm, "podcast", locale, report_md, ctx.figures())
    script: PodcastScript | None = None
    try:
        script = llm.structured(messages, PodcastScript, agent="podcast")
    except StructuredOutputError as exc:
        logger.warning("podcast script from the model failed (%s); deriving it from the report", exc)
    return script_from_model(script, report_md, locale=locale)


def slide_outline(ctx: AgentContext, report_md: str) -> SlideOutline:
    from research.render.derive import slide_outline_from_markdown

    llm = require_model(ctx)
    locale = detect_locale(report_md[:4000], default=ctx.locale or "en-US")
    figures = ctx.figures()
    messages = _messages(llm, "slides", locale, report_md, figures)
    try:
        outline = llm.structured(messages, SlideOutline, agent="slides")
    except StructuredOutputError as exc:
        logger.warning("slide outline from the model failed (%s); deriving it from the report", exc)
        return slide_outline_from_markdown(report_md, locale=locale)
    known = set(figures) | {m.group(2) for m in FIGURE_REF.finditer(report_md)}
    slides = []
    for slide in outline.slides:
        figure = (slide.figure or "").removeprefix("figures/") or None
        slides.append(slide.model_copy(update={"figure": figure if figure in known else None}))
    if not slides:
        return slide_outline_from_markdown(report_md, locale=locale)
    return outline.model_copy(update={"slides": slides})


def _messages(llm: ChatModel, agent: str, locale: str, report_md: str, figures: Sequence[str]) -> list[dict[str, Any]]:
    system = load_prompt(agent, locale)
    room = llm.context_window() - llm.count_tokens(system) - ANSWER_RESERVE * 2
    body = truncate_tokens(llm, report_md, max(room, 1000))
    figure_block = ("## Figures\n" + "\n".join(f"- {f}" for f in figures) + "\n\n") if figures else ""
    user = f"## Locale\n{locale}\n\n{figure_block}## Report\n{body}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
