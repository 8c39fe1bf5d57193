"""Researcher node: a tool loop (web search, page fetch, knowledge base, MCP) that ends in a cited step report."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded

from research.agents.citations import filter_citations, strip_references_section
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
    ANSWER_RESERVE,
    ChatModel,
    EngineError,
    ToolCall,
    drop_text_tool_calls,
    require_model,
    truncate_tokens,
)
from research.agents.nodes.tools import BUILTIN_TOOLS, OfferedMcpTool, offered_mcp_tools
from research.agents.prompts import load_fragment, load_prompt
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

logger = logging.getLogger(__name__)

SOURCE_TOKEN_CAP = 2_500  # per fetched page / kb passage shown to the researcher
MAX_TOOL_CALLS_PER_ROUND = 6


@dataclass
class ResearchRun:
    """State of one researcher step while its tool loop runs."""

    ctx: AgentContext
    llm: ChatModel
    step: PlanStep
    mcp: dict[str, OfferedMcpTool]
    kb_enabled: bool
    window: int
    used_tokens: int = 0
    fetched: dict[str, SourceRef] = field(default_factory=dict)  # url -> source
    registered: dict[int, SourceRef] = field(default_factory=dict)  # number -> source
    tool_errors: int = 0
    searches: int = 0

    def source_cap(self) -> int:
        room = self.window - self.used_tokens - ANSWER_RESERVE
        cap = int(self.ctx.options.get("source_token_cap") or SOURCE_TOKEN_CAP)
        return max(200, min(cap, room // 3))

    def tool_names(self) -> list[str]:
        # A step that needs no search (typically analysis over earlier results) gets no web
        # tools; with no tools at all the first call simply writes the report.
        names = ["web_search", "fetch_page"] if self.step.need_search else []
        if self.kb_enabled:
            names.append("knowledge_search")
        return names + list(self.mcp)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [BUILTIN_TOOLS[name] if name in BUILTIN_TOOLS else self.mcp[name].schema for name in self.tool_names()]

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
            seen = f" (already fetched as [{self.fetched[hit.url].number}])" if hit.url in self.fetched else ""
            lines.append(f"{index}. {hit.title}{seen}\n   URL: {hit.url}\n   {hit.snippet.strip()[:400]}")
        lines.append("Search results cannot be cited; use fetch_page to read a page and get its citation number.")
        return "\n".join(lines)

    def _fetch(self, args: dict[str, Any]) -> str:
        url = self._text_arg(args, "url", "fetch_page")
        if not url[:8].lower().startswith(("http://", "https://")):
            raise ToolError(f"fetch_page needs an http(s) URL, got {url[:200]!r}")
        if url in self.fetched:
            ref = self.fetched[url]
            return f"Already fetched as [{ref.number}] ({ref.title}); see the earlier result."
        ref = self.ctx.fetch(url)
        self.fetched[url] = ref
        self.registered[ref.number] = ref
        return source_listing(self.llm, ref, self.source_cap())

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


def research(
    ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *, variant: RunVariant | None = None
) -> StepResult:
    """One research step (or, with `variant`, one of a heavy step's parallel runs)."""
    llm = require_model(ctx)
    locale = plan.locale or ctx.locale
    budget = StepBudget.from_options(ctx.options)
    window = llm.context_window()
    run = ResearchRun(
        ctx=ctx,
        llm=llm,
        step=step,
        mcp={t.function_name: t for t in offered_mcp_tools(ctx.mcp_tools())},
        kb_enabled=bool(ctx.options.get("kb")),
        window=window,
    )
    tools = run.tool_schemas()
    system = load_prompt("researcher", locale)
    user = sections(
        *task_head(ctx.question, locale),
        plan_outline(plan, descriptions=False),
        prior_block(llm, prior, window // 4),
        step_block(step),
        f"## Tools\nAvailable: {', '.join(run.tool_names())}. "
        f"You have at most {budget.max_rounds} tool rounds; then write the step report.",
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    run.used_tokens = llm.count_tokens(system) + llm.count_tokens(user)

    final = ""
    stop = ""
    while True:
        ctx.check_cancelled()
        stop = budget.exhausted(round_s=round_seconds(llm))
        if stop:
            break
        budget.rounds += 1
        result = llm.chat(messages, agent="researcher", tools=tools or None, temperature=0.3)
        budget.spend(result)
        if result.reasoning.strip():
            ctx.emit("step.activity", {"kind": "think", "text": result.reasoning.strip()[:300]})
        calls = list(result.tool_calls)
        content = drop_text_tool_calls(result.content)
        if not calls:
            final = content
            stop = "done"
            break
        messages.append(assistant_tool_message(content, calls, budget.rounds))
        for index, call in enumerate(calls):
            if index >= MAX_TOOL_CALLS_PER_ROUND:
                answer = f"Error: at most {MAX_TOOL_CALLS_PER_ROUND} tool calls per round; this one was skipped."
            else:
                answer = run.execute(call)
            run.used_tokens += llm.count_tokens(answer)
            messages.append({"role": "tool", "tool_call_id": call_id(call, budget.rounds, index), "content": answer})

    if not final:
        final = _final_report(ctx, llm, messages, budget, stop, locale)

    registered_all = {s.number for s in ctx.sources()}
    allowed = set(run.registered) | allowed_from_prior(prior, registered_all)
    report = strip_references_section(final)
    report, dropped = filter_citations(report, allowed)
    if not report.strip():
        report = _digest(run, locale)
    if not report.strip():
        raise EngineError(
            f"Step {step.id!r} produced no report: the model wrote nothing and no sources were gathered "
            f"(stopped by {stop or 'the model'})."
        )
    return StepResult(
        step_id=step.id,
        title=step.title,
        report_md=report.strip() + "\n",
        notes={
            "sources": sorted(run.registered),
            "rounds": budget.rounds,
            "tokens": budget.tokens,
            "stopped": stop,
            "searches": run.searches,
            "fetched": len(run.fetched),
            "tool_errors": run.tool_errors,
            "removed_citations": dropped,
        },
    )


def _final_report(
    ctx: AgentContext, llm: ChatModel, messages: list[dict[str, Any]], budget: StepBudget, stop: str, locale: str
) -> str:
    """Ask for the step report without tools, once the loop is over (budget or endless tool calls)."""
    if stop in {"rounds", "tokens", "time"}:
        ctx.emit("step.activity", {"kind": "think", "text": f"Budget reached ({stop}); writing the step report."})
    messages.append({"role": "user", "content": load_fragment("research_final", locale)})
    ctx.check_cancelled()
    result = llm.chat(messages, agent="researcher", tools=None, temperature=0.3)
    budget.spend(result)
    return drop_text_tool_calls(result.content)


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
