"""Follow-up node: answer a question about a finished report from its sources, with citations.

When the job's sources do not cover the question (under MIN_COVERAGE of its terms occur in them), a
small research round runs first: one search, and the best two pages are read and registered as new
sources. The model engine writes the answer (streamed); the offline engine quotes the best sentences,
each once, with the command a source states for "how do I", and says so when none states what was asked.
Citations are checked like the report's (unknown numbers removed).
"""

from __future__ import annotations

from collections.abc import Callable

from research.agents.engines.offline.numbers import _numbers
from research.agents.engines.offline.read import fact_note, part_kind
from research.agents.nodes.model import require_model
from research.agents.prompts import load_prompt
from research.agents.rank import near_duplicate, split_sentences
from research.agents.text import is_chinese, key_terms
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


def _states(question: str, sentence: str, locale: str) -> bool:
    """Whether a sentence states what the question asks: it holds half of the question's key terms'
    words, and a figure when the question asks how much or how many."""
    wanted = {t for term in key_terms(question, locale) for t in tokenize(term)}
    if not wanted or 2 * len(wanted & set(tokenize(sentence))) < len(wanted):
        return False
    return part_kind(question) != "much" or bool(_numbers([sentence]))


def offline_answer(question: str, sources: list[SourceRef], locale: str) -> str:
    """The offline engine's follow-up answer: the best sentences of the sources, each said once (a
    sentence two overlapping sources hold, under two citations, is one sentence), the command a source
    states when the question asks how to do something, and a plain "the sources do not state …" when
    none of them says what was asked."""
    zh = is_chinese(locale)
    best: list[tuple[int, str]] = []
    for score, number, sentence in _ranked(question, sources, locale):
        if score <= 0 or len(best) >= 3:
            break
        if not any(near_duplicate(sentence, said) for _, said in best):
            best.append((number, sentence))
    lines: list[str] = []
    fact = fact_note(question, sources) if part_kind(question) == "how" else []
    if fact:
        lead = f"{fact[0]['lead']} " if fact[0]["lead"] else ""
        lines.append(f"{lead}`{fact[0]['text']}` [{fact[0]['source']}]")
        best = [(n, s) for n, s in best if s != fact[0]["lead"]]
    elif not any(_states(question, sentence, locale) for _, sentence in best):
        asked = question.strip().rstrip("?？")
        if not best:
            return (f"来源中没有关于“{asked}”的内容。" if zh
                    else f"The sources of this report do not cover this question (“{asked}”).")
        lines.append(f"来源没有直接说明“{asked}”。最接近的内容：" if zh
                     else f"The sources of this report do not state this (“{asked}”). The closest they come:")
    # A Chinese sentence takes its marker directly; an English one (in either answer) a space.
    glue = ["" if s[-1:] in "。！？" else " " for _, s in best]
    lines.append("".join(f"{s}{g}[{n}]{g}" for (n, s), g in zip(best, glue, strict=True)).strip())
    return "\n\n".join(line for line in lines if line)


def answer_followup(ctx: AgentContext, *, question: str, report_md: str,
                    on_delta: Callable[[str], None]) -> tuple[FinalReport, int]:
    """(the checked answer, how many sources the extra round added)."""
    locale = ctx.locale or "en-US"
    added = 0
    if ctx.options.get("web", True) and coverage(question, ctx.sources()) < MIN_COVERAGE:
        added = research_round(ctx, question)
    sources = ctx.sources()
    if ctx.llm is None:
        body = offline_answer(question, sources, locale)
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
