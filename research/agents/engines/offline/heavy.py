"""The offline engine's heavy mode (docs/agents.md, "Depth: standard and heavy"), without a model.

- Run 0 is the anchor: the standard step itself, so heavy never shows less than standard.
- Every other run (`research_run`) searches more query variants per facet (its opening query, which
  carries its source-type emphasis, and the step's title with the emphasis' words), ranks all the pages
  they found with the standard step ranker (the step's own query and facet, page weights, figures
  prior) leaning towards the emphasis' words, then follows one lead: the words its best sentences
  repeat that the question does not use become a second-round search (IterResearch, `lead_query`).
- Synthesis (`synthesize`): the anchor's finding first, then the best of the union of the pages every
  run read, reranked by the same ranker with what more runs picked ranked higher, near-duplicates of
  the anchor's sentences left out; up to `heavy_shown` sentences. A claim that runs found in different
  sources cites them all; a sentence whose source is not in the registry is dropped; then the claim
  check runs (research.agents.synthesis).

Kept apart from engine.py so that the standard engine needs only a two-line hook.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from research import scripts, textre
from research.agents.depth import EMPHASES
from research.agents.engines.offline.read import fact_note, no_source_line, part_kind
from research.agents.engines.offline.select import sentence_note
from research.agents.rank import RankedSentence, near_duplicate
from research.agents.synthesis import allowed_numbers, finding_check
from research.agents.text import detect_locale, is_chinese, key_terms
from research.agents.types import AgentContext, Plan, PlanStep, RunVariant, SourceRef, StepResult, ToolError
from research.ir import tokenize

_EN_WORD = textre.compile(r"[A-Za-z][A-Za-z'-]+")
_CJK_WORD = textre.compile(f"[{scripts.HAN_COMMON}]{{2}}")


class OfflineEngine(Protocol):
    """What heavy mode uses of research.agents.engines.offline.engine.OfflineEngine (not imported: it imports us)."""

    name: str
    sentences_per_step: int

    def research(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *,
                 variant: RunVariant | None = None) -> StepResult: ...

    def _gather(self, ctx: AgentContext, step: PlanStep, query: str, *,
                kb_skip: int = 0) -> tuple[list[SourceRef], list[str]]: ...

    def rank_step(self, ctx: AgentContext, step: PlanStep, plan: Plan, sources: list[SourceRef], *, shown: int,
                  lean: str = "", backing: Callable[[str], float] | None = None,
                  ) -> tuple[list[RankedSentence], bool, int]: ...


def heavy_shown(engine: OfflineEngine, runs: int) -> int:
    """Sentences a synthesized finding shows: a standard step's, plus one per extra run (at most double)."""
    return engine.sentences_per_step + min(engine.sentences_per_step, max(0, runs - 1))


def _bullet(text: str, numbers: list[int], zh: bool) -> str:
    marks = "".join(f"[{n}]" for n in numbers)
    return f"- {text}{marks}" if zh and text[-1:] in "。！？" else f"- {text} {marks}"


def _sentences(result: StepResult) -> list[dict[str, Any]]:
    raw = result.notes.get("sentences") if isinstance(result.notes, dict) else None
    return [s for s in raw or [] if isinstance(s, dict) and isinstance(s.get("text"), str)
            and isinstance(s.get("source"), int)]


def _interleave(lists: Iterable[list[SourceRef]]) -> list[SourceRef]:
    """Each list's first page, then each one's second …, each page once: the union in search order."""
    lists = [list(items) for items in lists]
    out: dict[int, SourceRef] = {}
    for rank in range(max((len(items) for items in lists), default=0)):
        for items in lists:
            if rank < len(items):
                out.setdefault(items[rank].number, items[rank])
    return list(out.values())


def _emphasis_words(variant: RunVariant, locale: str) -> str:
    emphasis = EMPHASES[variant.index % len(EMPHASES)]
    return emphasis.query_zh if is_chinese(locale) else emphasis.query_en


def variant_queries(step: PlanStep, variant: RunVariant, locale: str) -> list[str]:
    """The searches of one heavy run: its opening query, then the step's title with the emphasis' words."""
    base = step.description.strip() or step.title.strip()
    queries = [variant.opening_query or base, f"{step.title.strip()} {_emphasis_words(variant, locale)}".strip()]
    return list(dict.fromkeys(q for q in queries if q))


def _kb_skip(variant: RunVariant) -> int:
    """Knowledge-base chunks a run skips past the best one: none for the anchor, two more per run."""
    return 2 * variant.index


def _search_query(ctx: AgentContext, query: str, locale: str) -> str:
    """A variant's words plus the question's key terms it lacks (as a standard step's search has)."""
    missing = [t for t in key_terms(ctx.question, locale) if t.lower() not in query.lower()]
    return " ".join([query, *missing])[:400]


def lead_query(ctx: AgentContext, step: PlanStep, locale: str, found: list[str], words: int = 3) -> str:
    """A follow-up search from a run's best sentences: the step's title plus the words they repeat most
    that neither the question nor the step uses ("" when they repeat none)."""
    known = set(tokenize(f"{ctx.question} {step.title} {step.description}"))
    counts: dict[str, int] = {}
    shown: dict[str, str] = {}
    for sentence in found:
        pieces = _CJK_WORD.findall(sentence) if is_chinese(locale) else _EN_WORD.findall(sentence)
        for piece in dict.fromkeys(pieces):
            tokens = set(tokenize(piece))
            if not tokens or tokens & known or (piece.isascii() and len(piece) < 4) or piece.isdigit():
                continue
            key = " ".join(sorted(tokens))
            counts[key] = counts.get(key, 0) + 1
            shown.setdefault(key, piece)
    top = [shown[k] for k, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n > 1][:words]
    return f"{step.title.strip()} {' '.join(top)}".strip() if top else ""


def research_run(engine: OfflineEngine, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult],
                 variant: RunVariant) -> StepResult:
    """One of the k runs of a heavy step. Run 0 is the standard step itself (the anchor the synthesis
    builds on, so heavy never shows less than standard); every other run searches its query variants,
    ranks the pages together and follows one lead."""
    if variant.index == 0:
        anchor = engine.research(ctx, step, plan, prior)
        queries = [str(q) for q in anchor.notes.get("queries") or []] or [
            str(anchor.notes.get("query") or step.description or step.title)]
        return StepResult(anchor.step_id, anchor.title, anchor.report_md, figures=anchor.figures, notes={
            **anchor.notes, "run": 0, "anchor": True, "emphasis": "", "queries": queries,
            "searches": len(queries)})
    locale = ctx.locale or plan.locale or detect_locale(ctx.question)
    queries = variant_queries(step, variant, locale)
    found: list[list[SourceRef]] = []
    errors: list[str] = []
    for query in queries:
        ctx.check_cancelled()
        # Over a knowledge base every query finds the same best chunks: each run reads past them.
        sources, errs = engine._gather(ctx, step, _search_query(ctx, query, locale), kb_skip=_kb_skip(variant))
        found.append(sources)
        errors += errs
    sources = _interleave(found)
    if not sources:
        detail = f" ({'; '.join(errors[:3])})" if errors else ""
        raise ToolError(f"no sources found for step '{step.title}'{detail}")
    lean = _emphasis_words(variant, locale)
    ranked, fallback, candidates = engine.rank_step(ctx, step, plan, sources, shown=engine.sentences_per_step,
                                                    lean=lean)
    # A second round (IterResearch): what the run found so far suggests the next search.
    lead = lead_query(ctx, step, locale, [r.text for r in ranked[:3]])
    if lead and not fallback:
        ctx.check_cancelled()
        queries.append(lead)
        more, errs = engine._gather(ctx, step, _search_query(ctx, lead, locale), kb_skip=_kb_skip(variant))
        errors += errs
        read = {ref.number for ref in sources}
        if any(ref.number not in read for ref in more):
            sources += [ref for ref in more if ref.number not in read]
            ranked, fallback, candidates = engine.rank_step(ctx, step, plan, sources,
                                                            shown=engine.sentences_per_step, lean=lean)
    ctx.emit("step.activity", {"kind": "rank", "candidates": candidates,
                               "selected": min(len(ranked), engine.sentences_per_step)})
    zh = is_chinese(locale)
    # Pages were read but none is on the subject: said plainly, as a standard step says it (never a blank).
    report_md = "\n".join([_bullet(r.text, [r.source], zh) for r in ranked[: engine.sentences_per_step]]
                          or [no_source_line(step.title, zh, italic=False)]) + "\n"
    kind = part_kind(step.title) or part_kind(ctx.question)
    return StepResult(step.id, step.title, report_md, notes={
        "facts": fact_note(f"{ctx.question} {step.title}", sources) if kind == "how" else [],
        "engine": engine.name, "run": variant.index, "emphasis": variant.emphasis, "queries": queries,
        "searches": len(queries), "sources": [ref.number for ref in sources], "fallback": fallback,
        "sentences": [sentence_note(r) for r in ranked], "errors": errors,
    })


def synthesize(engine: OfflineEngine, ctx: AgentContext, step: PlanStep, plan: Plan,
               runs: list[StepResult]) -> StepResult:
    """The step's finding from its runs: the pages they read reranked together, agreement ranking higher."""
    locale = ctx.locale or plan.locale or detect_locale(ctx.question)
    zh = is_chinese(locale)
    registry = ctx.sources()
    allowed = allowed_numbers(runs, [], {s.number for s in registry})
    by_number = {s.number: s for s in registry}
    # The union of what the runs read, in search order; a source not in the registry is never used.
    read = [[by_number[n] for n in (r.notes.get("sources") or []) if n in allowed and n in by_number]
            for r in runs if isinstance(r.notes, dict)]
    sources = _interleave(read)
    picks = [[s for s in _sentences(r) if s["source"] in allowed] for r in runs]
    if not sources:
        raise ToolError(f"the {len(runs)} runs of step '{step.title}' found no registered source")
    if not any(picks):
        # The runs read pages, none on the subject: the step's finding is that, said plainly.
        line = no_source_line(step.title, zh, italic=False)
        return StepResult(step.id, step.title, line + "\n", notes={
            "engine": engine.name, "synthesis": True, "runs": len(runs), "shown": 0, "agreed": 0,
            "sources": [], "sentences": [], "facts": [], "covered": False})
    picked_by: dict[str, int] = {}
    for run in picks:
        for text in {s["text"] for s in run}:
            picked_by[text] = picked_by.get(text, 0) + 1

    def backing(text: str) -> float:  # what more runs picked ranks higher
        return 1.0 + 0.25 * picked_by.get(text, 0)

    shown_count = heavy_shown(engine, len(runs))
    ranked, _, _ = engine.rank_step(ctx, step, plan, sources, shown=shown_count, backing=backing)
    # The anchor run's finding (the standard step's) leads; the union rerank adds what it lacks.
    anchor = next((i for i, r in enumerate(runs) if isinstance(r.notes, dict) and r.notes.get("anchor")), None)
    lead = picks[anchor][: engine.sentences_per_step] if anchor is not None else []
    order: list[tuple[str, int, float, bool]] = [
        (x["text"], x["source"], float(x.get("score") or 0), bool(x.get("doubtful"))) for x in lead]
    extras = [(r.text, r.source, r.score, r.doubtful) for r in ranked
              if not any(near_duplicate(r.text, text) for text, *_ in order)]
    # Scores of the two rankings are not on one scale: an added sentence ranks below the anchor's last.
    floor = min((score for _, _, score, _ in order), default=1.0)
    order += [(text, source, min(score, floor), doubtful) for text, source, score, doubtful in extras]
    claims: list[dict[str, Any]] = []
    for text, source, score, doubtful in order:
        # The runs that picked the claim; those that found it in another page back it with that page too.
        found_in, runs_with = [source], set()
        for index, run in enumerate(picks):
            for x in run:
                if near_duplicate(x["text"], text):
                    runs_with.add(index)
                    found_in.append(x["source"])
        claims.append({"text": text, "source": source, "score": score,
                       "sources": list(dict.fromkeys(found_in)), "runs": sorted(runs_with),
                       **({"doubtful": True} if doubtful else {})})
    shown = claims[:shown_count]
    merged = "\n".join(_bullet(c["text"], c["sources"], zh) for c in shown) + "\n"
    checked = finding_check(merged, registry, allowed=allowed, locale=locale)
    if not checked.markdown.strip():
        raise ToolError(f"nothing the runs of step '{step.title}' found passed the claim check")
    kept = [c for c in claims if c["text"] in checked.markdown or c not in shown]
    facts = list({f["text"]: f for r in runs if isinstance(r.notes, dict) for f in r.notes.get("facts") or []
                  if isinstance(f, dict) and f.get("source") in allowed}.values())
    return StepResult(step.id, step.title, checked.markdown, notes={
        "facts": facts[:3], "covered": any(isinstance(r.notes, dict) and r.notes.get("covered") for r in runs),
        "engine": engine.name, "synthesis": True, "runs": len(runs), "shown": shown_count,
        "agreed": sum(1 for c in shown if len(c["runs"]) > 1),
        "sources": sorted({n for c in kept for n in c["sources"]}),
        "sentences": kept, "removed_citations": checked.removed_citations, "check": checked.check,
    })
