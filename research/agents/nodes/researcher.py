"""Researcher node: IterResearch rounds (web search, page fetch, knowledge base, MCP) that end in a cited step report.

Each round the model sees a small workspace rebuilt from scratch, never the transcript: the task (question,
plan outline, earlier results, the step and the run's focus), its evolving step report (its only memory)
and its last action with that action's results. It answers with the updated report as its message text and
its next action as tool calls; an answer without a tool call ends the step. The report and the last
action share one fixed token budget (research/agents/nodes/workspace.py): the report is compacted to its
share, the results get what it leaves, so a round's prompt stays the same size however many rounds run
(docs/agents.md, "Researcher rounds").
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded

from research.agents.nodes.budget import StepBudget, round_seconds
from research.agents.nodes.messages import (
    allowed_from_prior,
    assistant_tool_message,
    call_id,
    plan_outline,
    prior_block,
    sections,
    source_listing,
    step_block,
    task_head,
)
from research.agents.nodes.model import (
    ChatModel,
    EngineError,
    ToolCall,
    drop_text_tool_calls,
    fit_texts,
    require_model,
    truncate_tokens,
)
from research.agents.nodes.tools import BUILTIN_TOOLS, OfferedMcpTool, offered_mcp_tools
from research.agents.nodes.workspace import Memory, WorkspaceBudget, plan_budget
from research.agents.prompts import load_fragment, load_prompt
from research.agents.subject import subject_note
from research.agents.types import (
    AgentContext,
    BudgetExceeded,
    JobCancelled,
    Plan,
    PlanStep,
    RunVariant,
    SourceRef,
    StepResult,
    ToolError,
)
from research.report.citations import citation_numbers, filter_citations, strip_references_section

logger = logging.getLogger(__name__)

MAX_TOOL_CALLS_PER_ROUND = 6
# The plan outline is the other steps by title. Capped (titles shortened) so that a round's prompt
# does not grow with the number of steps: job tokens then grow linearly in the steps.
OUTLINE_TOKEN_CAP = 200
BASE_TEMPERATURE = 0.3


@dataclass
class LastAction:
    """The tool calls of the latest round and what they returned (shown to the model once)."""

    round_no: int
    calls: list[ToolCall]
    results: list[str]


@dataclass
class ResearchRun:
    """State of one researcher run while its rounds go on: the memory is `report`, never a transcript."""

    ctx: AgentContext
    llm: ChatModel
    step: PlanStep
    mcp: dict[str, OfferedMcpTool]
    kb_enabled: bool
    memory: Memory  # the evolving step report (citations already filtered) and its compacted view
    budget: WorkspaceBudget
    last: LastAction | None = None
    prior_allowed: set[int] = field(default_factory=set)
    fetched: dict[str, SourceRef] = field(default_factory=dict)  # url -> source
    registered: dict[int, SourceRef] = field(default_factory=dict)  # number -> source
    tool_errors: int = 0
    searches: int = 0
    removed_citations: int = 0
    peak_prompt_tokens: int = 0

    # ---- the workspace -----------------------------------------------------------------

    @property
    def report(self) -> str:
        return self.memory.text

    def source_cap(self) -> int:
        return self.budget.source

    def workspace(self, system: str, task: str) -> list[dict[str, Any]]:
        """The round's whole prompt: the task, then the model's last message (its report and its last
        action) and that action's results. Nothing older."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": task}]
        if self.last is not None:
            last = self.last
            messages.append(assistant_tool_message(self.memory.view, last.calls, last.round_no))
            for index, (call, answer) in enumerate(zip(last.calls, last.results, strict=True)):
                tool_id = call_id(call, last.round_no, index)
                messages.append({"role": "tool", "tool_call_id": tool_id, "content": answer})
        return messages

    def clean(self, text: str) -> str:
        """A report as the memory may hold it: no references list, citations only to sources this run
        registered or the prior results carry (so an invented number never survives a round)."""
        text, dropped = filter_citations(strip_references_section(text), set(self.registered) | self.prior_allowed)
        self.removed_citations += dropped
        return text.strip()

    def remember(self, content: str) -> None:
        """Take a round's message text as the new report, unless it is only a note about the next action."""
        if _rewrites_report(content, self.report):
            self.memory.update(self.clean(content))

    def act(self, calls: list[ToolCall], round_no: int) -> None:
        """Run the round's tool calls; their results share what the workspace budget leaves once the
        report view and the calls are in (a result cut to fit ends in "[… truncated]")."""
        results: list[str] = []
        for index, call in enumerate(calls):
            if index >= MAX_TOOL_CALLS_PER_ROUND:
                results.append(f"Error: at most {MAX_TOOL_CALLS_PER_ROUND} tool calls per round; this one was skipped.")
            else:
                results.append(self.execute(call))
        calls_json = json.dumps(assistant_tool_message("", calls, round_no)["tool_calls"], ensure_ascii=False)
        # Each tool message costs its id and a few template tokens besides its text.
        calls_tokens = self.llm.count_tokens(calls_json) + 8 * (len(calls) + 1)
        room = self.budget.results_room(self.llm.count_tokens(self.memory.view), calls_tokens)
        self.last = LastAction(round_no, calls, fit_texts(self.llm, results, room))

    # ---- tools -------------------------------------------------------------------------

    def tool_names(self) -> list[str]:
        return offered_tools(self.step, self.kb_enabled, self.mcp)

    def execute(self, call: ToolCall) -> str:
        """Run one tool call; problems come back as an error text the model can act on."""
        name = call.name or ""
        if call.parse_error:  # the client flags bad JSON and unknown tool names
            self.tool_errors += 1
            return f"Error: {name or 'tool call'}: {call.parse_error}. Available tools: {', '.join(self.tool_names())}."
        args = call.arguments if isinstance(call.arguments, dict) else {}
        try:
            if name == "web_search":
                return self._search(args)
            if name == "fetch_page":
                return self._fetch(args)
            if name == "knowledge_search" and self.kb_enabled:
                return self._kb(args)
            if name in self.mcp:
                return self._mcp(self.mcp[name], args)
        except (JobCancelled, BudgetExceeded, SoftTimeLimitExceeded):  # the step must stop now
            raise
        except ToolError as exc:
            self.tool_errors += 1
            return f"Error: {exc}"
        except Exception as exc:  # a broken tool is reported to the model, never crashes the step
            logger.warning("tool %s failed", name, exc_info=True)
            self.tool_errors += 1
            return f"Error: {name} failed: {exc}"
        self.tool_errors += 1
        return f"Error: unknown tool {name!r}. Available tools: {', '.join(self.tool_names())}."

    @staticmethod
    def _text_arg(args: dict[str, Any], key: str, tool: str) -> str:
        value = args.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ToolError(f"{tool} needs a non-empty string argument {key!r}")
        return value.strip()

    def _search(self, args: dict[str, Any]) -> str:
        query = self._text_arg(args, "query", "web_search")[:400]
        self.searches += 1
        hits = self.ctx.search(query, max_results=int(self.ctx.options.get("search_results") or 8))
        if not hits:
            return f'No results for "{query}". Try different keywords.'
        lines = [f'Search results for "{query}":']
        for index, hit in enumerate(hits, start=1):
            if hit.url in self.fetched:  # one line: its findings are in the report, its room goes to new hits
                lines.append(f"{index}. {hit.title} (already fetched as [{self.fetched[hit.url].number}])")
            else:
                lines.append(f"{index}. {hit.title}\n   URL: {hit.url}\n   {hit.snippet.strip()[:400]}")
        lines.append("Search results cannot be cited; use fetch_page to read a page and get its citation number.")
        return "\n".join(lines)

    def _fetch(self, args: dict[str, Any]) -> str:
        url = self._text_arg(args, "url", "fetch_page")
        if not url.lower().startswith(("http://", "https://")):
            raise ToolError(f"fetch_page needs an http(s) URL, got {url[:200]!r}")
        if url in self.fetched:  # shown again from the registry: the workspace holds no earlier results
            ref = self.fetched[url]
            return f"Already fetched as [{ref.number}]; here it is again.\n" + source_listing(
                self.llm, ref, self.source_cap()
            )
        ref = self.ctx.fetch(url)
        self.fetched[url] = ref
        self.registered[ref.number] = ref
        # A near-miss page (same words, another subject) is flagged to the model (research.agents.subject).
        note = subject_note(self.ctx.question, self.ctx.locale or "en-US", ref.title, ref.text)
        # The note is part of the page's share of the workspace, not added on top of it: a round that reads
        # several near misses must not outgrow the others (the workspace stays flat, issue 32).
        cap = self.source_cap()
        if note:
            cap = max(cap // 2, cap - self.llm.count_tokens(note))
        return note + source_listing(self.llm, ref, cap)

    def _kb(self, args: dict[str, Any]) -> str:
        query = self._text_arg(args, "query", "knowledge_search")[:400]
        refs = self.ctx.kb_search(query, limit=5)
        if not refs:
            return f'No passages in the knowledge base match "{query}".'
        cap = max(150, self.source_cap() // max(1, len(refs)) * 2)
        for ref in refs:
            self.registered[ref.number] = ref
        return "\n\n---\n\n".join(source_listing(self.llm, ref, cap) for ref in refs)

    def _mcp(self, tool: OfferedMcpTool, args: dict[str, Any]) -> str:
        text = self.ctx.mcp_call(tool.spec.server, tool.spec.name, args) or "(the tool returned no text)"
        return truncate_tokens(self.llm, text, self.source_cap())


def offered_tools(step: PlanStep, kb_enabled: bool, mcp: dict[str, OfferedMcpTool]) -> list[str]:
    # A step that needs no search (typically analysis over earlier results) gets no web
    # tools; with no tools at all the first call simply writes the report.
    names = ["web_search", "fetch_page"] if step.need_search else []
    if kb_enabled:
        names.append("knowledge_search")
    return names + list(mcp)


def research(
    ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *, variant: RunVariant | None = None
) -> StepResult:
    """One research step (or, with `variant`, one of a heavy step's parallel runs), in IterResearch rounds."""
    llm = require_model(ctx)
    locale = plan.locale or ctx.locale
    budget = StepBudget.from_options(ctx.options)
    window = llm.context_window()
    mcp = {t.function_name: t for t in offered_mcp_tools(ctx.mcp_tools())}
    kb_enabled = bool(ctx.options.get("kb"))
    names = offered_tools(step, kb_enabled, mcp)
    system = load_prompt("researcher", locale)
    # The order keeps a long shared prefix: what every step of the job sees comes first, the step's
    # own parts later, the round's status last.
    head = sections(
        *task_head(ctx.question, locale),
        capped_outline(llm, plan, OUTLINE_TOKEN_CAP),
        prior_block(llm, prior, window // 4),
        step_block(step),
        focus_block(variant, locale),
        f"## Tools\nAvailable: {', '.join(names) or 'none'}.",
    )
    tools = [BUILTIN_TOOLS[name] if name in BUILTIN_TOOLS else mcp[name].schema for name in names]
    # What every round sends besides the workspace: the system prompt, the task with its longest round
    # line, the tool schemas, and the template's few tokens per message.
    fixed = (llm.count_tokens(system) + llm.count_tokens(sections(head, round_block(99, 99, locale)))
             + llm.count_tokens(json.dumps(tools, ensure_ascii=False)) + 16)
    workspace = plan_budget(window=window, fixed=fixed, options=ctx.options)
    run = ResearchRun(
        ctx=ctx,
        llm=llm,
        step=step,
        mcp=mcp,
        kb_enabled=kb_enabled,
        memory=Memory(llm, locale, workspace.report),
        budget=workspace,
        prior_allowed=allowed_from_prior(prior, {s.number for s in ctx.sources()}),
    )
    sampling: dict[str, Any] = {"temperature": BASE_TEMPERATURE}
    if variant is not None:  # sibling runs sample apart: their own seed, a slightly different temperature
        sampling = {"temperature": round(min(0.6, BASE_TEMPERATURE + 0.05 * variant.index), 2), "seed": variant.seed}
    opening = _opening_call(run, variant)
    if opening is not None:  # the scheduler's opening search, so that sibling runs start apart
        ctx.check_cancelled()
        run.act([opening], 0)

    final = ""
    stop = ""
    while True:
        ctx.check_cancelled()
        stop = budget.exhausted(round_s=round_seconds(llm))
        if stop:
            break
        budget.rounds += 1
        task = sections(head, round_block(budget.rounds, budget.max_rounds, locale))
        result = llm.chat(run.workspace(system, task), agent="researcher", tools=tools or None, **sampling)
        budget.spend(result)
        run.peak_prompt_tokens = max(run.peak_prompt_tokens, result.usage.prompt_tokens)
        if result.reasoning.strip():
            ctx.emit("step.activity", {"kind": "think", "text": result.reasoning.strip()[:300]})
        calls = list(result.tool_calls)
        content = unwrap_report(drop_text_tool_calls(result.content))
        if not calls:
            final = content
            stop = "done"
            break
        run.remember(content)
        run.act(calls, budget.rounds)

    if stop != "done":
        final = _final_report(ctx, llm, run, system, sections(head, round_block(0, 0, locale)), budget, stop, locale,
                              sampling)
    report = run.clean(final) if _rewrites_report(final, run.report) else run.report
    report = run.memory.restore(report)  # what compaction moved out of sight comes back, the note goes
    if not report.strip():
        report = _digest(run, locale)
    if not report.strip():
        raise EngineError(
            f"Step {step.id!r} produced no report: the model wrote nothing and no sources were gathered "
            f"(stopped by {stop or 'the model'})."
        )
    notes: dict[str, Any] = {
        "sources": sorted(run.registered),
        "rounds": budget.rounds,
        "tokens": budget.tokens,
        "stopped": stop,
        "searches": run.searches,
        "fetched": len(run.fetched),
        "tool_errors": run.tool_errors,
        "removed_citations": run.removed_citations,
        "peak_prompt_tokens": run.peak_prompt_tokens,
        "workspace_tokens": run.budget.total,
        "compactions": run.memory.compactions,
    }
    return StepResult(step_id=step.id, title=step.title, report_md=report.strip() + "\n", notes=notes)


def capped_outline(llm: ChatModel, plan: Plan, cap: int) -> str:
    """The plan's steps by title within about `cap` tokens: on a long plan every title is shortened
    alike, so a round's prompt is about the same size for 3 steps or 12. (Steps see the others by
    title only; their own description comes in the step block.)"""
    text = plan_outline(plan, descriptions=False)
    if llm.count_tokens(text) <= cap:
        return text
    head = f"## Plan: {plan.title}"
    lines = [f"- [{step.id}] {step.title}" for step in plan.steps]
    share = max(6, (cap - llm.count_tokens(head)) // max(1, len(lines)))
    shortened = [head]
    for line in lines:
        size = llm.count_tokens(line)
        shortened.append(line if size <= share else line[: max(8, len(line) * share // size - 1)].rstrip() + "…")
    return "\n".join(shortened)


def focus_block(variant: RunVariant | None, locale: str) -> str:
    if variant is None or not variant.emphasis.strip():
        return ""
    text = load_fragment("research_focus", locale, index=variant.index + 1, count=variant.count,
                         emphasis=variant.emphasis.strip())
    return f"## Focus\n{text}"


def round_block(round_no: int, max_rounds: int, locale: str) -> str:
    """The round's status, last in the task message. Round 0: the budget is spent, write up."""
    if round_no <= 0:
        return f"## Round\n{load_fragment('research_round_over', locale)}"
    return f"## Round\n{load_fragment('research_round', locale, round=round_no, max_rounds=max_rounds)}"


def _opening_call(run: ResearchRun, variant: RunVariant | None) -> ToolCall | None:
    query = (variant.opening_query if variant is not None else "").strip()
    if not query:
        return None
    names = run.tool_names()
    tool = "web_search" if "web_search" in names else "knowledge_search" if "knowledge_search" in names else ""
    return ToolCall(id="", name=tool, arguments={"query": query}) if tool else None


def unwrap_report(text: str) -> str:
    """The report inside `<report>…</report>` when a model tags it (as IterResearch-trained models may);
    otherwise the text as it is."""
    start, end = text.find("<report>"), text.rfind("</report>")
    if start < 0 or end < start:
        return text
    return text[start + len("<report>") : end].strip()


def _rewrites_report(content: str, report: str) -> bool:
    """Whether a reply's text is the (new) report. Empty text keeps the report; so does a short note
    such as "Let me search for …" that keeps none of the report's citations: the memory must not be
    lost to a model that narrates its next action instead of restating the report."""
    if not content.strip():
        return False
    cited = set(citation_numbers(report))
    return not (cited and not cited & set(citation_numbers(content)) and len(content) * 3 < len(report))


def _final_report(
    ctx: AgentContext,
    llm: ChatModel,
    run: ResearchRun,
    system: str,
    task: str,
    budget: StepBudget,
    stop: str,
    locale: str,
    sampling: dict[str, Any],
) -> str:
    """A budget ended the rounds: one tool-less call over the workspace folds the last results into the report."""
    if stop in {"rounds", "tokens", "time"}:
        ctx.emit("step.activity", {"kind": "think", "text": f"Budget reached ({stop}); writing the step report."})
    messages = run.workspace(system, task)
    if run.last is not None:  # the instruction goes last, after the results it refers to
        messages.append({"role": "user", "content": load_fragment("research_final", locale)})
    ctx.check_cancelled()
    result = llm.chat(messages, agent="researcher", tools=None, **sampling)
    budget.spend(result)
    run.peak_prompt_tokens = max(run.peak_prompt_tokens, result.usage.prompt_tokens)
    return unwrap_report(drop_text_tool_calls(result.content))


def _digest(run: ResearchRun, locale: str) -> str:
    """Last resort when the model wrote nothing: list what was gathered, with citations."""
    if not run.registered:
        return ""
    lines = [load_fragment("research_digest", locale), ""]
    for number in sorted(run.registered):
        ref = run.registered[number]
        snippet = " ".join((ref.text or "").split())[:300]
        lines.append(f"- **{ref.title}**: {snippet} [{number}]")
    return "\n".join(lines)
