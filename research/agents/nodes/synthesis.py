"""Synthesis node (heavy mode): one model call merges the k runs of a research step into its finding.

The prompt (prompts/synthesis.*.md) states the rules: claims several runs back with different sources are
kept with all their citations, disagreements are stated with both sides cited, claims with no registry
source are dropped. research.agents.synthesis then enforces what can be checked: citations only to sources
the runs registered, no uncited sentence, the claim check. A single run needs no merging.
"""

from __future__ import annotations

from research.agents.nodes.messages import sections, step_block, task_head
from research.agents.nodes.model import ANSWER_RESERVE, fit_texts, require_model
from research.agents.prompts import load_fragment, load_prompt
from research.agents.synthesis import allowed_numbers, best_run, finding_check
from research.agents.types import AgentContext, Plan, PlanStep, StepResult

MAX_LISTED_SOURCES = 120


def synthesize(ctx: AgentContext, step: PlanStep, plan: Plan, runs: list[StepResult]) -> StepResult:
    if not runs:
        raise ValueError("synthesis needs at least one run")
    locale = plan.locale or ctx.locale
    registry = ctx.sources()
    allowed = allowed_numbers(runs, [], {s.number for s in registry})
    notes: dict[str, object] = {"synthesis": True, "runs": len(runs)}
    if len(runs) == 1:
        text = runs[0].report_md
        notes["merged"] = False
    else:
        llm = require_model(ctx)
        listed = [s for s in registry if s.number in allowed][:MAX_LISTED_SOURCES]
        head = sections(
            *task_head(ctx.question, locale),
            step_block(step),
            "## Sources (cite only these numbers)\n" + "\n".join(f"[{s.number}] {s.title[:150]} — {s.url}"
                                                                  for s in listed),
        )
        system = load_prompt("synthesis", locale)
        window = llm.context_window()
        room = window - llm.count_tokens(system) - llm.count_tokens(head) - max(ANSWER_RESERVE, window // 4)
        bodies = fit_texts(llm, [r.report_md for r in runs], max(room, 300 * len(runs)))
        reports = "\n\n".join(f"### Report {i}\n{body.strip()}" for i, body in enumerate(bodies, start=1))
        user = f"{head}\n\n## Reports\n{reports}\n\n" + load_fragment("synthesis_final", locale)
        ctx.check_cancelled()
        reply = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                         agent="synthesis", temperature=0.2)
        text = reply.content
        notes["merged"] = True
    checked = finding_check(text, registry, allowed=allowed, locale=locale)
    if not checked.markdown.strip():
        # Nothing cited survived (an empty or uncited merge): the run citing the most sources, checked the same way.
        fallback = best_run(runs)
        checked = finding_check(fallback.report_md, registry, allowed=allowed, locale=locale)
        notes["fallback"] = fallback.notes.get("run", 0) if isinstance(fallback.notes, dict) else 0
    if not checked.markdown.strip():
        raise ValueError(f"no claim of the {len(runs)} runs of step {step.id!r} cites a registered source")
    notes.update({"sources": sorted(allowed), "removed_citations": checked.removed_citations,
                  "dropped_claims": checked.dropped_claims, "check": checked.check})
    figures = list(dict.fromkeys(f for r in runs for f in r.figures))
    return StepResult(step_id=step.id, title=step.title, report_md=checked.markdown, figures=figures, notes=notes)
