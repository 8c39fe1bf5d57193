"""Coder node (processing steps): write Python, run it in the sandbox, fix it, and report the result."""

from __future__ import annotations

from typing import Any

from research import textre
from research.agents.nodes.budget import StepBudget
from research.agents.nodes.messages import (
    allowed_from_prior,
    assistant_tool_message,
    call_id,
    plan_outline,
    prior_block,
    sections,
    step_block,
    task_head,
)
from research.agents.nodes.model import (
    ChatModel,
    ChatResult,
    EngineError,
    ToolCall,
    drop_text_tool_calls,
    require_model,
)
from research.agents.nodes.tools import RUN_PYTHON_TOOL
from research.agents.prompts import load_fragment, load_prompt
from research.agents.types import AgentContext, CodeRun, Plan, PlanStep, StepResult
from research.report.citations import filter_citations, fix_figure_refs, strip_references_section

MAX_CODE_RUNS = 4  # the first run plus up to three fixes
CODE_BLOCK = textre.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", textre.DOTALL | textre.IGNORECASE)


def process(ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult:
    llm = require_model(ctx)
    locale = plan.locale or ctx.locale
    budget = StepBudget.from_options(ctx.options)
    window = llm.context_window()
    user = sections(
        *task_head(ctx.question, locale),
        plan_outline(plan, descriptions=False),
        prior_block(llm, prior, window // 3),
        step_block(step),
        "Write the complete Python program for this step now.",
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": load_prompt("coder", locale)},
        {"role": "user", "content": user},
    ]
    runs: list[CodeRun] = []
    codes: list[str] = []
    figures: list[str] = []
    text_only = ""
    nudges = 0
    stop = ""
    while len(runs) < MAX_CODE_RUNS:
        ctx.check_cancelled()
        stop = budget.exhausted()
        if stop:
            break
        budget.rounds += 1
        result = llm.chat(messages, agent="coder", tools=[RUN_PYTHON_TOOL], temperature=0.2)
        budget.spend(result)
        content = drop_text_tool_calls(result.content)
        code, call = extract_code(result, content)
        if not code:
            if runs:  # it has seen the output and answered in prose: that is its result
                text_only = content
                break
            nudges += 1
            if nudges >= 2:
                text_only = content
                break
            messages.append({"role": "assistant", "content": content})
            messages.append(
                {
                    "role": "user",
                    "content": "Please give the complete Python program in one ```python block "
                    "or as a run_python tool call.",
                }
            )
            continue
        run = ctx.run_python(code)
        runs.append(run)
        codes.append(code)
        figures.extend(f for f in run.figures if f not in figures)
        feedback = run_feedback(run, attempts_left=MAX_CODE_RUNS - len(runs))
        if call is not None:
            messages.append(assistant_tool_message(content, [call], budget.rounds))
            messages.append({"role": "tool", "tool_call_id": call_id(call, budget.rounds, 0), "content": feedback})
        else:
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": feedback})
        if run.error or (run.exit_code == 0 and not run.timed_out):
            break

    notes: dict[str, Any] = {"runs": len(runs), "rounds": budget.rounds, "tokens": budget.tokens, "stopped": stop}
    refused = next((r for r in runs if r.error), None)
    if refused is not None:
        notes["sandbox_error"] = refused.error
        return StepResult(step.id, step.title, _refused_report(refused, codes[-1], locale), figures=[], notes=notes)
    if not runs:
        if not text_only.strip():
            raise EngineError(f"Step {step.id!r}: the coder wrote no Python code, so nothing could be computed.")
        notes["no_code"] = True
        report = text_only
    else:
        last = runs[-1]
        notes["succeeded"] = last.exit_code == 0 and not last.timed_out
        report = text_only or _summary(ctx, llm, messages, budget, figures, locale)
        if not report.strip():
            report = _plain_run_report(last, locale)

    registered_all = {s.number for s in ctx.sources()}
    report = strip_references_section(report)
    report, notes["removed_citations"] = filter_citations(report, allowed_from_prior(prior, registered_all))
    known = figures + [f for f in ctx.figures() if f not in figures]
    report = fix_figure_refs(report, known, add_missing=figures)
    return StepResult(step.id, step.title, report.strip() + "\n", figures=figures, notes=notes)


def extract_code(result: ChatResult, content: str) -> tuple[str, ToolCall | None]:
    """The program from a run_python call, else the longest ```python block of the reply."""
    for call in result.tool_calls:
        args = call.arguments
        if call.name == "run_python" and isinstance(args, dict) and isinstance(args.get("code"), str):
            return args["code"], call
    blocks = [b for b in CODE_BLOCK.findall(content) if b.strip()]
    return (max(blocks, key=len), None) if blocks else ("", None)


def run_feedback(run: CodeRun, *, attempts_left: int) -> str:
    if run.error:
        return f"The sandbox refused to run the code: {run.error}"
    lines = [f"Exit code: {run.exit_code}" + (" (timed out)" if run.timed_out else "")]
    lines.append("Figures saved: " + (", ".join(run.figures) if run.figures else "none"))
    lines.append("stdout:\n```\n" + (run.stdout[-6000:].strip() or "(empty)") + "\n```")
    if run.stderr.strip():
        lines.append("stderr:\n```\n" + run.stderr[-3000:].strip() + "\n```")
    if run.exit_code != 0 or run.timed_out:
        lines.append(
            f"The run failed. Fix the code and run it again ({attempts_left} attempts left)."
            if attempts_left
            else "The run failed and no attempts are left."
        )
    return "\n\n".join(lines)


def _summary(
    ctx: AgentContext, llm: ChatModel, messages: list[dict[str, Any]], budget: StepBudget, figures: list[str],
    locale: str,
) -> str:
    figure_list = ", ".join(figures) if figures else load_fragment("no_figures", locale)
    messages.append({"role": "user", "content": load_fragment("coder_summary", locale, figures=figure_list)})
    ctx.check_cancelled()
    result = llm.chat(messages, agent="coder", tools=None, temperature=0.3)
    budget.spend(result)
    return drop_text_tool_calls(result.content)


def _plain_run_report(run: CodeRun, locale: str) -> str:
    failed = run.exit_code != 0 or run.timed_out
    head = load_fragment("coder_failed" if failed else "coder_output", locale)
    output = (run.stdout.strip() or run.stderr.strip() or "(no output)")[-3000:]
    return f"{head}\n\n```\n{output}\n```"


def _refused_report(run: CodeRun, code: str, locale: str) -> str:
    head = load_fragment("coder_refused", locale, error=run.error)
    return f"{head}\n\n```python\n{code.strip()}\n```\n"
