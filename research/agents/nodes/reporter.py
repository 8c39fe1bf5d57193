"""Reporter node: the final report from the plan, the sources and the step results, streamed as it is written."""

from __future__ import annotations

from collections.abc import Callable

from research.agents.nodes.messages import plan_outline, sections, task_head
from research.agents.nodes.model import ANSWER_RESERVE, EngineError, fit_texts, require_model
from research.agents.prompts import load_fragment, load_prompt
from research.agents.types import STYLES, AgentContext, Plan, StepResult
from research.report.citations import ensure_title, fix_figure_refs, strip_references_section

MAX_LISTED_SOURCES = 300


def report(
    ctx: AgentContext,
    plan: Plan,
    results: list[StepResult],
    *,
    style: str,
    on_delta: Callable[[str], None],
) -> str:
    llm = require_model(ctx)
    locale = plan.locale or ctx.locale
    style = style if style in STYLES else "academic"
    sources = ctx.sources()[:MAX_LISTED_SOURCES]
    figures: list[str] = []
    for result in results:
        figures.extend(f for f in result.figures if f not in figures)
    known_figures = figures + [f for f in ctx.figures() if f not in figures]

    source_lines = "\n".join(f"[{s.number}] {s.title[:150]} — {s.url}" for s in sources)
    head = sections(
        *task_head(ctx.question, locale),
        f"## Style\n{style}",
        plan_outline(plan),
        "## Sources (cite only these numbers)\n" + (source_lines or "(none)"),
        "## Figures (embed as ![caption](figures/<name>))\n" + "\n".join(f"- {f}" for f in figures)
        if figures
        else "",
    )
    system = load_prompt("reporter", locale)
    window = llm.context_window()
    room = window - llm.count_tokens(system) - llm.count_tokens(head) - max(ANSWER_RESERVE, window // 4)
    bodies = fit_texts(llm, [r.report_md for r in results], max(room, 300 * max(1, len(results))))
    steps = "\n\n".join(f"### [{r.step_id}] {r.title}\n{body.strip()}" for r, body in zip(results, bodies, strict=True))
    user = f"{head}\n\n## Step results\n{steps or '(none)'}\n\n" + load_fragment("reporter_final", locale, style=style)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]

    ctx.check_cancelled()
    # The client streams the visible text only (reasoning is filtered at the model boundary).
    reply = llm.chat(messages, agent="reporter", temperature=0.4, on_delta=on_delta)
    text = strip_references_section(reply.content.strip())
    if not text.strip():
        raise EngineError("The reporter returned an empty report.")
    text = ensure_title(text, plan.title)
    text = fix_figure_refs(text, known_figures, add_missing=figures, heading=load_fragment("figures_heading", locale))
    return text.strip() + "\n"
