"""Follow-up node: answer a question about a finished report from its sources, with citations.

When the job's sources do not cover the question (under MIN_COVERAGE of its terms occur in them), a
small research round runs first: one search, and the best two pages are read and registered as new
sources. The model engine writes the answer (streamed); the offline engine quotes the best sentences.
Citations are checked like the report's (unknown numbers removed).
"""

from __future__ import annotations

from collections.abc import Callable

from research.agents.nodes.model import require_model
from research.agents.prompts import load_prompt
from research.agents.rank import split_sentences
from research.agents.text import is_chinese
from research.agents.types import AgentContext, SourceRef, ToolError
from research.ir import BM25, tokenize
from research.report.citations import FinalReport, finalize_report

EXTRA_PAGES = 2
MAX_SOURCE_CHARS = 3000
MIN_COVERAGE = 0.6  # below this share of the question's terms in the sources, search for more


def _ranked(question: str, sources: list[SourceRef], locale: str) -> list[tuple[float, int, str]]:
    rows = [(src.number, s) for src in sources for s in split_sentences(src.text or "", locale) if len(s) > 20]
    if not rows:
        return []
    scores = BM25([tokenize(s) for _n, s in rows]).score(tokenize(question))
    return sorted(((score, n, s) for score, (n, s) in zip(scores, rows, strict=True)), reverse=True)


def coverage(question: str, sources: list[SourceRef]) -> float:
    """The share of the question's terms that occur anywhere in the sources (1.0 for a question without terms)."""
    terms = set(tokenize(question))
    if not terms:
        return 1.0
    vocabulary: set[str] = set()
    for src in sources:
        vocabulary.update(tokenize(src.text or ""))
    return len(terms & vocabulary) / len(terms)


def research_round(ctx: AgentContext, question: str) -> int:
    """Search once and read the best pages; returns how many new sources were registered."""
    before = {s.number for s in ctx.sources()}
    try:
        hits = ctx.search(question, max_results=4)
    except Exception as exc:  # the answer goes on from the sources we have
        ctx.emit("followup.activity", {"kind": "search_failed", "error": str(exc)[:300]})
        return 0
    ctx.emit("followup.activity", {"kind": "search", "query": question, "count": len(hits)})
    for hit in hits[:EXTRA_PAGES]:
        try:
            ctx.fetch(hit.url)
        except ToolError as exc:
            ctx.emit("followup.activity", {"kind": "fetch_failed", "url": hit.url, "error": str(exc)[:300]})
    return len({s.number for s in ctx.sources()} - before)


def answer_followup(ctx: AgentContext, *, question: str, report_md: str,
                    on_delta: Callable[[str], None]) -> tuple[FinalReport, int]:
    """(the checked answer, how many sources the extra round added)."""
    locale = ctx.locale or "en-US"
    added = 0
    if ctx.options.get("web", True) and coverage(question, ctx.sources()) < MIN_COVERAGE:
        added = research_round(ctx, question)
    sources = ctx.sources()
    if ctx.llm is None:
        best = [(n, s) for score, n, s in _ranked(question, sources, locale)[:3] if score > 0]
        if best:
            sep = "" if is_chinese(locale) else " "
            body = sep.join(f"{s}{sep}[{n}]" for n, s in best)
        else:
            body = ("来源中没有关于这个问题的内容。" if is_chinese(locale)
                    else "The sources of this report do not cover this question.")
        on_delta(body)
    else:
        listing = "\n\n".join(f"[{s.number}] {s.title or s.url}\n{(s.text or '')[:MAX_SOURCE_CHARS]}" for s in sources)
        messages = [
            {"role": "system", "content": load_prompt("followup", locale)},
            {"role": "user", "content": f"## Report\n{report_md[:30000]}\n\n## Sources\n{listing}\n\n"
                                        f"## Follow-up question\n{question}"},
        ]
        body = require_model(ctx).chat(messages, agent="followup", temperature=0.3, on_delta=on_delta).content
    return finalize_report(body, sources, locale=locale), added
