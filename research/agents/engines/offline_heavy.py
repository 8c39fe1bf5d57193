"""The offline engine's heavy mode (docs/agents.md, "Depth: standard and heavy"), without a model.

- One run (`research_run`): more query variants per facet than a standard step (the run's opening
  query, which carries its source-type emphasis, and the step's title with the emphasis' words), each
  searched and ranked by the standard research path; the union of their ranked sentences is ranked
  again against the step's own query, near-duplicates dropped.
- Synthesis (`synthesize`): the union of the runs' ranked sentences, ranked again and de-duplicated.
  A sentence that two runs found in different sources cites both and ranks higher; a sentence whose
  source is not in the registry is dropped; then the claim check runs (research.agents.synthesis).

Kept apart from offline.py so that the standard engine needs only a two-line hook.
"""

from __future__ import annotations

from typing import Any, Protocol

from research.agents.depth import EMPHASES
from research.agents.rank import near_duplicate, rank_sentences
from research.agents.synthesis import allowed_numbers, finding_check, run_sources
from research.agents.text import detect_locale, is_chinese, key_terms
from research.agents.types import AgentContext, Plan, PlanStep, RunVariant, StepResult, ToolError


class OfflineEngine(Protocol):
    """What heavy mode uses of research.agents.engines.offline.OfflineEngine (not imported: it imports us)."""

    name: str
    sentences_per_step: int
    per_source: int

    def research(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *,
                 variant: RunVariant | None = None) -> StepResult: ...


def _bullet(text: str, numbers: list[int], zh: bool) -> str:
    marks = "".join(f"[{n}]" for n in numbers)
    return f"- {text}{marks}" if zh and text[-1:] in "。！？" else f"- {text} {marks}"


def _sentences(result: StepResult) -> list[dict[str, Any]]:
    raw = result.notes.get("sentences") if isinstance(result.notes, dict) else None
    return [s for s in raw or [] if isinstance(s, dict) and isinstance(s.get("text"), str)
            and isinstance(s.get("source"), int)]


def _rank_query(ctx: AgentContext, step: PlanStep, locale: str) -> str:
    return " ".join([step.title, step.description, *key_terms(ctx.question, locale)])


def variant_queries(step: PlanStep, variant: RunVariant, locale: str) -> list[str]:
    """The searches of one heavy run: its opening query, then the step's title with the emphasis' words."""
    emphasis = EMPHASES[variant.index % len(EMPHASES)]
    words = emphasis.query_zh if is_chinese(locale) else emphasis.query_en
    base = step.description.strip() or step.title.strip()
    queries = [variant.opening_query or base, f"{step.title.strip()} {words}".strip()]
    return list(dict.fromkeys(q for q in queries if q))


def research_run(engine: OfflineEngine, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult],
                 variant: RunVariant) -> StepResult:
    """One of the k runs of a heavy step: each query variant through the standard path, union reranked."""
    locale = ctx.locale or plan.locale or detect_locale(ctx.question)
    queries = variant_queries(step, variant, locale)
    results: list[StepResult] = []
    errors: list[str] = []
    for query in queries:
        ctx.check_cancelled()
        try:
            results.append(engine.research(ctx, step.model_copy(update={"description": query}), plan, prior))
        except ToolError as exc:  # one variant finding nothing still leaves the others
            errors.append(str(exc))
    if not results:
        raise ToolError("; ".join(errors[:3]) or f"no sources found for step '{step.title}'")
    pool: dict[str, dict[str, Any]] = {}
    for result in results:
        for sentence in _sentences(result):
            pool.setdefault(sentence["text"], sentence)
    candidates = [(s["text"], s["source"]) for s in pool.values()]
    ranked = rank_sentences(_rank_query(ctx, step, locale), candidates, limit=engine.sentences_per_step * 2 + 2,
                            locale=locale, per_source=engine.per_source, diversity=0.3, floor=0.35)
    picked: list[dict[str, Any]] = [{"text": r.text, "source": r.source, "score": r.score} for r in ranked]
    if not picked:  # nothing matches the step's own words: keep the variants' own order
        picked = list(pool.values())[: engine.sentences_per_step * 2 + 2]
    zh = is_chinese(locale)
    report_md = "\n".join(_bullet(s["text"], [s["source"]], zh) for s in picked[: engine.sentences_per_step]) + "\n"
    sources = sorted({n for r in results for n in run_sources(r)})
    return StepResult(step.id, step.title, report_md, notes={
        "engine": engine.name, "run": variant.index, "emphasis": variant.emphasis, "queries": queries,
        "searches": len(queries), "sources": sources, "sentences": picked, "errors": errors,
    })


def synthesize(engine: OfflineEngine, ctx: AgentContext, step: PlanStep, plan: Plan,
               runs: list[StepResult]) -> StepResult:
    """The step's finding from its runs: union of their sentences, reranked, near-duplicates merged."""
    locale = ctx.locale or plan.locale or detect_locale(ctx.question)
    zh = is_chinese(locale)
    registry = ctx.sources()
    allowed = allowed_numbers(runs, [], {s.number for s in registry})
    # Every sentence once, with the runs and sources that found it (near-duplicates count as one claim).
    claims: list[dict[str, Any]] = []
    for index, result in enumerate(runs):
        for sentence in _sentences(result):
            if sentence["source"] not in allowed:
                continue  # no registry source: dropped
            same = next((c for c in claims if near_duplicate(sentence["text"], c["text"])), None)
            if same is None:
                claims.append({"text": sentence["text"], "source": sentence["source"], "runs": {index},
                               "sources": [sentence["source"]]})
            else:
                same["runs"].add(index)
                if sentence["source"] not in same["sources"]:
                    same["sources"].append(sentence["source"])
    if not claims:
        raise ToolError(f"the {len(runs)} runs of step '{step.title}' found no sentence from a registered source")
    backing = {c["text"]: len(c["runs"]) for c in claims}
    ranked = rank_sentences(
        _rank_query(ctx, step, locale), [(c["text"], c["source"]) for c in claims],
        limit=engine.sentences_per_step * 2 + 2, locale=locale, per_source=engine.per_source, diversity=0.3,
        floor=0.35, prior=lambda text: 1.0 + 0.5 * (backing.get(text, 1) - 1),  # two runs agreeing rank higher
    )
    by_text = {c["text"]: c for c in claims}
    picked = [by_text[r.text] for r in ranked] or claims[: engine.sentences_per_step * 2 + 2]
    shown = picked[: engine.sentences_per_step]
    merged = "\n".join(_bullet(c["text"], c["sources"], zh) for c in shown) + "\n"
    checked = finding_check(merged, registry, allowed=allowed, locale=locale)
    if not checked.markdown.strip():
        raise ToolError(f"nothing the runs of step '{step.title}' found passed the claim check")
    kept = [c for c in picked if c["text"] in checked.markdown or c not in shown]
    return StepResult(step.id, step.title, checked.markdown, notes={
        "engine": engine.name, "synthesis": True, "runs": len(runs),
        "agreed": sum(1 for c in shown if len(c["runs"]) > 1),
        "sources": sorted({n for c in kept for n in c["sources"]}),
        "sentences": [{"text": c["text"], "source": c["source"], "sources": c["sources"], "runs": sorted(c["runs"])}
                      for c in kept],
        "removed_citations": checked.removed_citations, "check": checked.check,
    })
