"""Script nodes: the podcast script and the slide outline, written from the finished report.

Every bullet and spoken line the model writes must carry a sentence of the report
(research.report.carry); if the model's output is unusable, each falls back to one derived from the report itself
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
    from research.render.podcast_script import script_from_model  # repaired before TTS, or derived from the report

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
    checked = _carrying_slides(outline, report_md, locale, known)
    return checked if checked is not None else slide_outline_from_markdown(report_md, locale=locale)


def _carrying_slides(outline: SlideOutline, report_md: str, locale: str, known: set[str]) -> SlideOutline | None:
    """The model's deck with only bullets that carry a sentence of the report (with that sentence's
    citations), no more slides than the extractive deck of the report has; None when too little is
    left (fewer than half the bullets, or fewer than two)."""
    from research.render.derive import slide_outline as extractive_outline
    from research.report.carry import carried, with_citations
    from research.report.document import parse_report

    doc = parse_report(report_md, locale=locale)
    sentences = doc.sentences()
    most = len(extractive_outline(doc).slides)  # the extractive size rule
    slides = []
    written = kept = 0
    for slide in outline.slides:
        figure = (slide.figure or "").removeprefix("figures/") or None
        bullets = []
        for bullet in slide.bullets:
            written += 1
            sentence = carried(bullet, sentences)
            if sentence is not None:
                bullets.append(with_citations(bullet, sentence))
        kept += len(bullets)
        if bullets or (figure in known) or slide.table:
            slides.append(slide.model_copy(update={"bullets": bullets, "figure": figure if figure in known else None}))
    if not slides or kept < max(2, written // 2):
        return None
    return outline.model_copy(update={"slides": slides[:most]})


def _messages(llm: ChatModel, agent: str, locale: str, report_md: str, figures: Sequence[str]) -> list[dict[str, Any]]:
    system = load_prompt(agent, locale)
    room = llm.context_window() - llm.count_tokens(system) - ANSWER_RESERVE * 2
    body = truncate_tokens(llm, report_md, max(room, 1000))
    figure_block = ("## Figures\n" + "\n".join(f"- {f}" for f in figures) + "\n\n") if figures else ""
    user = f"## Locale\n{locale}\n\n{figure_block}## Report\n{body}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
