"""The LLM engine: every text-producing node of the job graph, driven by a model.

The orchestrator calls one method per node; each method reads what it needs
from the AgentContext, talks to the model through `ctx.llm` (the client in
research.llm.client) and returns typed state. Tools (search, fetch, knowledge
base, sandbox) are reached only through the context, which registers sources
and emits the tool events itself.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from billiard.exceptions import SoftTimeLimitExceeded
from pydantic import BaseModel, Field

from research.agents.graph import normalize_plan
from research.agents.prompts import load_prompt
from research.agents.text import detect_locale, is_chinese
from research.agents.types import (
    MAX_CLARIFY_QUESTIONS,
    STYLES,
    AgentContext,
    BudgetExceeded,
    CodeRun,
    CoordinatorDecision,
    JobCancelled,
    Plan,
    PlanStep,
    PodcastScript,
    SlideOutline,
    SourceRef,
    StepResult,
    ToolError,
    clarifications_text,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_ROUNDS = 8
DEFAULT_STEP_TOKENS = 200_000
DEFAULT_STEP_SECONDS = 600.0
DEFAULT_WINDOW = 32_768  # used only when the client cannot tell
ANSWER_RESERVE = 4_096  # tokens kept free for the model's answer when sizing inputs
SOURCE_TOKEN_CAP = 2_500  # per fetched page / kb passage shown to the researcher
MAX_TOOL_CALLS_PER_ROUND = 6
MAX_CODE_RUNS = 4  # the first run plus up to three fixes
MAX_LISTED_SOURCES = 300


class EngineError(RuntimeError):
    """A node could not produce its output. The message is shown to the user as the failure reason."""


class CoordinatorReply(BaseModel):
    """What the coordinator model returns (structured output)."""

    action: Literal["answer", "research", "clarify"]
    locale: str = ""
    answer: str = Field(default="", max_length=4000)
    questions: list[str] = Field(default_factory=list, max_length=3)  # clarify: up to 3 short questions


# --------------------------------------------------------------------------------------
# Text helpers (pure functions; exported for tests and for the orchestrator if useful)
# --------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# A tool call written as text when no tools were offered (e.g. the final, tool-less call).
_TEXT_TOOL_CALL = re.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", re.DOTALL | re.IGNORECASE)
_LOCALE_TAG = re.compile(r"^[a-z]{2,3}(-[A-Za-z]{2,4})?(-[A-Za-z]{2})?$")
_FENCE = re.compile(r"(```.*?(?:```|\Z)|`[^`\n]*`)", re.DOTALL)
# [3], [3, 4], [3-5], [3][4] (each bracket matched separately); not [x](link) nor [^1].
_CITE_ITEM = r"\s*\d+\s*(?:[-–]\s*\d+\s*)?"
_CITATION = re.compile(rf"([ \t]*)(?<![\w!\]])\[({_CITE_ITEM}(?:[,，;、]{_CITE_ITEM})*)\](?!\()")
_REFERENCE_HEADING = re.compile(
    r"^\s{0,3}(?:#{1,6}\s*|\*\*)\s*(?:\d+[.)]?\s*)?"
    r"(references|reference list|sources|bibliography|works cited|citations"
    r"|参考文献|参考资料|参考来源|引用来源|资料来源|来源)"
    r"\s*[:：]?\s*(?:\*\*)?\s*$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s")
_FIGURE_REF = re.compile(r"!\[([^\]]*)\]\(figures/([^)\s]+)\)")
_CODE_BLOCK = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def strip_think(text: str) -> str:
    """Remove leaked reasoning (<think>…</think>, a dangling `…</think>` prefix, an unclosed <think>)
    and tool calls written as text."""
    text = _TEXT_TOOL_CALL.sub("", _THINK_BLOCK.sub("", text or ""))
    lowered = text.lower()
    if "</think>" in lowered:  # the opening tag was part of the chat template
        text = text[lowered.rindex("</think>") + len("</think>") :]
        lowered = text.lower()
    if "<think>" in lowered:  # reasoning that never closed: nothing after it is an answer
        text = text[: lowered.index("<think>")]
    return text.strip()


def strip_references_section(md: str) -> str:
    """Drop a references / sources section the model wrote despite being told not to."""
    lines = md.split("\n")
    out: list[str] = []
    skipping_level = 0
    in_fence = False
    for line in lines:
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if skipping_level:
            heading = _HEADING.match(line)
            if heading and len(heading.group(1)) <= skipping_level and not in_fence:
                skipping_level = 0
            else:
                continue
        if not in_fence and _REFERENCE_HEADING.match(line):
            heading = _HEADING.match(line)
            skipping_level = len(heading.group(1)) if heading else 6
            continue
        out.append(line)
    return "\n".join(out).rstrip() + ("\n" if md.endswith("\n") else "")


def _expand(item: str) -> list[int]:
    parts = re.split(r"[-–]", item.strip())
    if len(parts) == 2 and parts[0].strip().isdigit() and parts[1].strip().isdigit():
        low, high = int(parts[0]), int(parts[1])
        if 0 < high - low <= 20:
            return list(range(low, high + 1))
    return [int(p) for p in parts if p.strip().isdigit()]


def citation_numbers(md: str) -> list[int]:
    """Every citation number written in `md` (outside code), in order of first appearance."""
    found: dict[int, None] = {}
    for segment, is_code in _split_code(md):
        if is_code:
            continue
        for match in _CITATION.finditer(segment):
            for item in re.split(r"[,，;、]", match.group(2)):
                for n in _expand(item):
                    found.setdefault(n, None)
    return list(found)


def filter_citations(md: str, allowed: Iterable[int]) -> tuple[str, int]:
    """Keep only citations to `allowed` numbers, written as [a][b]; return the text and how many were dropped."""
    allowed_set = set(allowed)
    dropped = 0

    def _sub(match: re.Match[str]) -> str:
        nonlocal dropped
        numbers: list[int] = []
        for item in re.split(r"[,，;、]", match.group(2)):
            numbers.extend(_expand(item))
        kept = [n for n in dict.fromkeys(numbers) if n in allowed_set]
        dropped += len(numbers) - len(kept)
        # A citation removed entirely takes its leading space with it ("text [9]." -> "text.").
        return match.group(1) + "".join(f"[{n}]" for n in kept) if kept else ""

    pieces: list[str] = []
    for segment, is_code in _split_code(md):
        if is_code:
            pieces.append(segment)
            continue
        pieces.append(_CITATION.sub(_sub, segment))
    return "".join(pieces), dropped


def _split_code(md: str) -> list[tuple[str, bool]]:
    # Citations inside code (e.g. `values[3]`) are code, not citations.
    parts: list[tuple[str, bool]] = []
    last = 0
    for match in _FENCE.finditer(md):
        parts.append((md[last : match.start()], False))
        parts.append((match.group(0), True))
        last = match.end()
    parts.append((md[last:], False))
    return parts


def ensure_title(md: str, title: str) -> str:
    """Make the report start with a level-1 heading."""
    body = md.lstrip()
    if body.startswith("# "):
        return body
    return f"# {title.strip() or 'Report'}\n\n{body}"


def fix_figure_refs(md: str, known: Sequence[str], *, add_missing: Sequence[str] = (), heading: str = "") -> str:
    """Drop figure embeds that name no known figure; append `add_missing` figures that are not embedded."""
    known_set = set(known)
    md = _FIGURE_REF.sub(lambda m: m.group(0) if m.group(2) in known_set else "", md)
    embedded = {m.group(2) for m in _FIGURE_REF.finditer(md)}
    missing = [name for name in add_missing if name in known_set and name not in embedded]
    if missing:
        block = "\n\n".join(f"![{_caption(name)}](figures/{name})" for name in missing)
        md = md.rstrip() + ("\n\n" + heading if heading else "") + "\n\n" + block + "\n"
    return md


def _caption(name: str) -> str:
    stem = name.rsplit(".", 1)[0]
    return re.sub(r"[-_]+", " ", stem).strip() or name


def _lang(locale: str, en: str, zh: str) -> str:
    return zh if is_chinese(locale) else en


# --------------------------------------------------------------------------------------
# Client helpers: tolerate clients without count_tokens / context_window (test stubs)
# --------------------------------------------------------------------------------------


def _structured_output_error() -> type[Exception]:
    try:
        from research.llm.client import StructuredOutputError
    except ImportError:  # client not installed: nothing can raise it
        return _NeverRaised
    return StructuredOutputError


class _NeverRaised(Exception):
    pass


def _count(llm: Any, text: str) -> int:
    counter = getattr(llm, "count_tokens", None)
    if counter is not None:
        try:
            return int(counter(text))
        except Exception:  # a tokenizer hiccup must not fail a step; estimate instead
            logger.debug("count_tokens failed; estimating", exc_info=True)
    return max(1, len(text) // 3)


def _window(llm: Any) -> int:
    getter = getattr(llm, "context_window", None)
    if getter is not None:
        try:
            return int(getter())
        except Exception:
            logger.debug("context_window failed; using default", exc_info=True)
    return DEFAULT_WINDOW


def truncate_tokens(llm: Any, text: str, cap: int) -> str:
    """Cut `text` to at most about `cap` tokens (on a line or word boundary where possible)."""
    total = _count(llm, text)
    if total <= cap:
        return text
    cut = int(len(text) * cap / total * 0.95)
    piece = text[:cut]
    for _ in range(6):
        if _count(llm, piece) <= cap:
            break
        cut = int(cut * 0.85)
        piece = text[:cut]
    boundary = max(piece.rfind("\n"), piece.rfind(" "))
    if boundary > len(piece) * 0.8:
        piece = piece[:boundary]
    return piece.rstrip() + "\n[… truncated]"


def fit_texts(llm: Any, texts: Sequence[str], budget: int) -> list[str]:
    """Share `budget` tokens among `texts`: short ones stay whole, long ones are cut to an equal share."""
    sizes = [_count(llm, t) for t in texts]
    if sum(sizes) <= budget:
        return list(texts)
    remaining = max(budget, 200 * len(texts))
    order = sorted(range(len(texts)), key=lambda i: sizes[i])
    caps = [0] * len(texts)
    for position, index in enumerate(order):
        share = remaining // (len(texts) - position)
        caps[index] = min(sizes[index], max(share, 150))
        remaining -= caps[index]
    return [truncate_tokens(llm, t, cap) for t, cap in zip(texts, caps, strict=True)]


def _usage_tokens(result: Any) -> int:
    usage = getattr(result, "usage", None)
    if usage is None:
        return 0
    return int(getattr(usage, "prompt_tokens", 0) or 0) + int(getattr(usage, "completion_tokens", 0) or 0)


def _require_llm(ctx: AgentContext) -> Any:
    llm = ctx.llm
    if llm is None:
        raise EngineError("The llm engine needs a model client, but this job has none (is the model server set up?).")
    return llm


# --------------------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------------------


@dataclass
class StepBudget:
    """Rounds, tokens and seconds one step may spend (from ctx.options, with defaults)."""

    max_rounds: int = DEFAULT_MAX_ROUNDS
    max_tokens: int = DEFAULT_STEP_TOKENS
    max_seconds: float = DEFAULT_STEP_SECONDS
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0
    tokens: int = 0

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> StepBudget:
        def pick(key: str, default: float) -> float:
            value = options.get(key)
            return float(value) if isinstance(value, int | float) and value > 0 else default

        return cls(
            max_rounds=int(pick("max_rounds", DEFAULT_MAX_ROUNDS)),
            max_tokens=int(pick("step_token_budget", DEFAULT_STEP_TOKENS)),
            max_seconds=pick("step_time_budget_s", DEFAULT_STEP_SECONDS),
        )

    def spend(self, result: Any) -> None:
        self.tokens += _usage_tokens(result)

    def exhausted(self) -> str:
        """Why no further tool round may start ("" while there is budget left)."""
        if self.rounds >= self.max_rounds:
            return "rounds"
        if self.tokens >= self.max_tokens:
            return "tokens"
        if time.monotonic() - self.started >= self.max_seconds:
            return "time"
        return ""


# --------------------------------------------------------------------------------------
# Tools offered to the researcher
# --------------------------------------------------------------------------------------


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


WEB_SEARCH_TOOL = _tool(
    "web_search",
    "Search the web. Returns titles, URLs and snippets (leads only; fetch a page to read and cite it).",
    {"query": {"type": "string", "description": "search query, specific keywords"}},
    ["query"],
)
FETCH_PAGE_TOOL = _tool(
    "fetch_page",
    "Fetch a web page and read its text. Returns the page with its citation number [n].",
    {"url": {"type": "string", "description": "an http(s) URL, usually from web_search results"}},
    ["url"],
)
KNOWLEDGE_SEARCH_TOOL = _tool(
    "knowledge_search",
    "Search the user's own documents (knowledge base). Returns passages with their citation numbers [n].",
    {"query": {"type": "string", "description": "what to look for"}},
    ["query"],
)
RUN_PYTHON_TOOL = _tool(
    "run_python",
    "Run a complete Python program in a sandbox (no network). Returns stdout, stderr and saved PNG figures.",
    {"code": {"type": "string", "description": "the complete Python program"}},
    ["code"],
)


@dataclass
class OfferedMcpTool:
    """An operator-configured MCP tool offered to the researcher under a safe function name."""

    function_name: str
    server: str
    name: str
    schema: dict[str, Any]


MCP_LIST_TTL_S = 300.0
MCP_FAILURE_TTL_S = 30.0
_mcp_cache: dict[str, tuple[float, list[dict[str, Any]]]] = {}
_mcp_cache_lock = threading.Lock()


def _list_mcp_server(server: str) -> list[dict[str, Any]]:
    """Tool specs of one MCP server, cached per process: listing opens a session (often a
    subprocess), which parallel steps should not repeat for every step."""
    now = time.monotonic()
    with _mcp_cache_lock:
        cached = _mcp_cache.get(server)
        if cached and cached[0] > now:
            return cached[1]
    try:
        from research.tools.mcp_client import mcp_list_server_tools

        specs = [
            {"server": server, "name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in mcp_list_server_tools(server)
        ]
        expires = now + MCP_LIST_TTL_S
    except Exception:  # an unreachable or misconfigured MCP server only removes its tools
        logger.warning("could not list the tools of MCP server %r", server, exc_info=True)
        specs, expires = [], now + MCP_FAILURE_TTL_S
    with _mcp_cache_lock:
        _mcp_cache[server] = (expires, specs)
    return specs


def _mcp_tools(options: dict[str, Any]) -> list[OfferedMcpTool]:
    """MCP tools for ctx.options["mcp_tools"]: server names (listed via the MCP client) or tool dicts
    ({"server", "name", "description", "input_schema"})."""
    specs: list[dict[str, Any]] = []
    for entry in options.get("mcp_tools") or []:
        if isinstance(entry, dict) and entry.get("name") and entry.get("server"):
            specs.append(entry)
        elif isinstance(entry, str) and entry:
            specs.extend(_list_mcp_server(entry))
    tools: list[OfferedMcpTool] = []
    used = {"web_search", "fetch_page", "knowledge_search", "run_python"}
    for spec in specs:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp_{spec['name']}")[:60]
        name, n = base, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        params = spec.get("input_schema") or spec.get("inputSchema") or spec.get("parameters")
        schema = _tool(name, str(spec.get("description") or spec["name"])[:1000], {}, [])
        if isinstance(params, dict) and params.get("type") == "object":
            schema["function"]["parameters"] = params
        tools.append(OfferedMcpTool(name, str(spec["server"]), str(spec["name"]), schema))
    return tools


def _call_mcp(tool: OfferedMcpTool, arguments: dict[str, Any]) -> str:
    from research.tools.mcp_client import mcp_call_tool

    return mcp_call_tool(tool.server, tool.name, arguments) or "(the tool returned no text)"


# --------------------------------------------------------------------------------------
# Prompt pieces (the user message; system prompts are in research/agents/prompts/)
# --------------------------------------------------------------------------------------


def _plan_outline(plan: Plan, *, descriptions: bool = True) -> str:
    # Steps see the other steps by title only (their own description comes in the step block):
    # descriptions of every step on every turn made prompt tokens grow with steps squared.
    lines = [f"## Plan: {plan.title}"]
    for index, step in enumerate(plan.steps, start=1):
        deps = f" (uses {', '.join(step.depends_on)})" if step.depends_on else ""
        lines.append(f"{index}. [{step.id}] ({step.step_type}) {step.title}{deps}")
        if descriptions and step.description:
            lines.append(f"   {step.description}")
    return "\n".join(lines)


def _step_block(step: PlanStep) -> str:
    return "\n".join(
        [
            "## Current step",
            f"id: {step.id}",
            f"title: {step.title}",
            f"type: {step.step_type}",
            f"description: {step.description or step.title}",
        ]
    )


def _prior_block(llm: Any, prior: Sequence[StepResult], budget: int) -> str:
    if not prior:
        return ""
    bodies = fit_texts(llm, [p.report_md for p in prior], budget)
    parts = ["## Results of earlier steps"]
    for result, body in zip(prior, bodies, strict=True):
        parts.append(f"### [{result.step_id}] {result.title}\n{body.strip()}")
        if result.figures:
            parts.append("Figures: " + ", ".join(result.figures))
    return "\n\n".join(parts)


def _allowed_from_prior(prior: Sequence[StepResult], registered: set[int]) -> set[int]:
    allowed: set[int] = set()
    for result in prior:
        allowed.update(n for n in result.notes.get("sources", []) if isinstance(n, int))
        allowed.update(citation_numbers(result.report_md))
    return allowed & registered


def _source_listing(llm: Any, ref: SourceRef, cap: int) -> str:
    kind = "Knowledge-base passage" if ref.kind == "kb" else "Source"
    body = truncate_tokens(llm, ref.text or "", cap) if ref.text else "(no text)"
    return f"{kind} [{ref.number}]: {ref.title}\nURL: {ref.url}\n\n{body}"


def _assistant_tool_message(content: str, calls: Sequence[Any], round_no: int) -> dict[str, Any]:
    tool_calls = []
    for index, call in enumerate(calls):
        raw = getattr(call, "raw_arguments", "") or json.dumps(getattr(call, "arguments", {}) or {}, ensure_ascii=False)
        tool_calls.append(
            {
                "id": getattr(call, "id", "") or f"call_{round_no}_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": raw},
            }
        )
    return {"role": "assistant", "content": content, "tool_calls": tool_calls}


def _call_id(call: Any, round_no: int, index: int) -> str:
    return getattr(call, "id", "") or f"call_{round_no}_{index}"


# --------------------------------------------------------------------------------------
# The research tool loop
# --------------------------------------------------------------------------------------


@dataclass
class _ResearchRun:
    """State of one researcher step while its tool loop runs."""

    ctx: AgentContext
    llm: Any
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

    def execute(self, call: Any) -> str:
        """Run one tool call; problems come back as an error text the model can act on."""
        name = getattr(call, "name", "") or ""
        if getattr(call, "parse_error", ""):  # the client flags bad JSON and unknown tool names
            self.tool_errors += 1
            return f"Error: {name or 'tool call'}: {call.parse_error}. Available tools: {', '.join(self.tool_names())}."
        args = getattr(call, "arguments", None)
        if not isinstance(args, dict):
            args = {}
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
        available = ", ".join(self.tool_names())
        return f"Error: unknown tool {name!r}. Available tools: {available}."

    def tool_names(self) -> list[str]:
        # A step that needs no search (typically analysis over earlier results) gets no web
        # tools; with no tools at all the first call simply writes the report.
        names = ["web_search", "fetch_page"] if self.step.need_search else []
        if self.kb_enabled:
            names.append("knowledge_search")
        return names + list(self.mcp)

    def _text_arg(self, args: dict[str, Any], key: str, tool: str) -> str:
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
        if not re.match(r"^https?://", url, re.IGNORECASE):
            raise ToolError(f"fetch_page needs an http(s) URL, got {url[:200]!r}")
        if url in self.fetched:
            ref = self.fetched[url]
            return f"Already fetched as [{ref.number}] ({ref.title}); see the earlier result."
        ref = self.ctx.fetch(url)
        self.fetched[url] = ref
        self.registered[ref.number] = ref
        return _source_listing(self.llm, ref, self.source_cap())

    def _kb(self, args: dict[str, Any]) -> str:
        query = self._text_arg(args, "query", "knowledge_search")[:400]
        refs = self.ctx.kb_search(query, limit=5)
        if not refs:
            return f'No passages in the knowledge base match "{query}".'
        cap = max(150, self.source_cap() // max(1, len(refs)) * 2)
        for ref in refs:
            self.registered[ref.number] = ref
        return "\n\n---\n\n".join(_source_listing(self.llm, ref, cap) for ref in refs)

    def _mcp(self, tool: OfferedMcpTool, args: dict[str, Any]) -> str:
        self.ctx.emit("step.activity", {"kind": "tool", "name": tool.name, "server": tool.server})
        return truncate_tokens(self.llm, _call_mcp(tool, args), self.source_cap())


# --------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------


class LLMEngine:
    """Implements research.agents.types.Engine with a model behind ctx.llm."""

    name = "llm"

    # ---- coordinator ---------------------------------------------------------------------

    def coordinate(self, ctx: AgentContext) -> CoordinatorDecision:
        llm = _require_llm(ctx)
        question = ctx.question.strip()
        detected = detect_locale(question, default=ctx.locale or "en-US")
        forced = str(ctx.options.get("locale") or "").strip()
        if forced == "auto" or not _LOCALE_TAG.match(forced):  # "auto": the question decides
            forced = ""
        # Clarify once: after the user answered (or skipped), the job goes on to planning.
        clarify_allowed = bool(ctx.options.get("clarify")) and "clarifications" not in ctx.options
        # Files were asked for, or the user pressed "Research it anyway": a report is expected.
        report_expected = (any(o != "md" for o in ctx.options.get("outputs", ["md"]))
                           or ctx.options.get("direct_answer") is False)
        messages = [
            {"role": "system", "content": load_prompt("coordinator", detected)},
            {
                "role": "user",
                "content": f"## Clarification allowed\n{'yes' if clarify_allowed else 'no'}\n\n"
                           f"## Report expected\n{'yes' if report_expected else 'no'}\n\n## Question\n{question}",
            },
        ]
        try:
            reply = llm.structured(messages, CoordinatorReply, agent="coordinator", max_tokens=800)
        except _structured_output_error() as exc:
            # Routing to research is the safe default: a real question is never lost.
            logger.warning("coordinator output unusable (%s); routing to research", exc)
            return CoordinatorDecision("research", forced or detected)

        locale = forced or self._pick_locale(detected, reply.locale, question)
        answer = strip_think(reply.answer)
        if reply.action == "answer" and answer:
            return CoordinatorDecision("answer", locale, answer)
        questions = [q for q in (strip_think(q).strip() for q in reply.questions) if q][:MAX_CLARIFY_QUESTIONS]
        if reply.action == "clarify" and clarify_allowed and (questions or answer):
            return CoordinatorDecision("clarify", locale, answer or questions[0], questions=questions or [answer])
        return CoordinatorDecision("research", locale)

    @staticmethod
    def _pick_locale(detected: str, proposed: str, question: str) -> str:
        # The script decides when it is unambiguous (CJK, kana, hangul); otherwise the
        # model may refine the default (e.g. a German question → de-DE).
        if detect_locale(question, default="") or not proposed:
            return detected
        proposed = proposed.strip().replace("_", "-")
        return proposed if _LOCALE_TAG.match(proposed) else detected

    # ---- planner -------------------------------------------------------------------------

    def plan(
        self,
        ctx: AgentContext,
        *,
        max_steps: int,
        background: str = "",
        feedback: str = "",
        previous: Plan | None = None,
    ) -> Plan:
        llm = _require_llm(ctx)
        locale = ctx.locale or detect_locale(ctx.question)
        max_steps = max(1, int(max_steps))
        parts = [
            f"## Question\n{ctx.question.strip()}",
            f"## Locale\n{locale}",
            f"## Maximum number of steps\n{max_steps}",
        ]
        if background.strip():
            fitted = truncate_tokens(llm, background.strip(), max(500, _window(llm) // 4))
            parts.append(f"## Background (quick search results)\n{fitted}")
        if clarified := clarifications_text(ctx.options):
            parts.append(clarified + "\nPlan for what these answers ask for.")
        if previous is not None:
            parts.append("## Previous plan\n```json\n" + previous.model_dump_json(indent=2) + "\n```")
        if feedback.strip():
            parts.append(f"## User feedback on the previous plan\n{feedback}")
            parts.append("Revise the plan so that it follows this feedback.")
        messages = [
            {"role": "system", "content": load_prompt("planner", locale)},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
        try:
            plan = llm.structured(messages, Plan, agent="planner", max_attempts=3)
        except _structured_output_error() as exc:
            raise EngineError(f"The planner could not produce a valid plan after several attempts: {exc}") from exc

        plan = normalize_plan(plan, max_steps=max_steps, locale=locale)
        if not plan.steps:
            # An empty plan is useless to the research team; research the question itself.
            title = ctx.question.strip()[:300] or plan.title
            plan = plan.model_copy(update={"steps": [PlanStep(id="s1", title=title, description=title)]})
        return plan

    # ---- researcher ----------------------------------------------------------------------

    def research(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult:
        llm = _require_llm(ctx)
        locale = plan.locale or ctx.locale
        budget = StepBudget.from_options(ctx.options)
        window = _window(llm)
        run = _ResearchRun(
            ctx=ctx,
            llm=llm,
            step=step,
            mcp={t.function_name: t for t in _mcp_tools(ctx.options)},
            kb_enabled=bool(ctx.options.get("kb")),
            window=window,
        )
        tools = self._research_tools(run)
        system = load_prompt("researcher", locale)
        user = "\n\n".join(
            part
            for part in (
                f"## Question\n{ctx.question.strip()}",
                f"## Locale\n{locale}",
                _plan_outline(plan, descriptions=False),
                _prior_block(llm, prior, window // 4),
                _step_block(step),
                f"## Tools\nAvailable: {', '.join(run.tool_names())}. "
                f"You have at most {budget.max_rounds} tool rounds; then write the step report.",
            )
            if part
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        run.used_tokens = _count(llm, system) + _count(llm, user)

        final = ""
        stop = ""
        while True:
            ctx.check_cancelled()
            stop = budget.exhausted()
            if stop:
                break
            budget.rounds += 1
            result = llm.chat(messages, agent="researcher", tools=tools or None, temperature=0.3)
            budget.spend(result)
            self._emit_thinking(ctx, result)
            calls = list(getattr(result, "tool_calls", None) or [])
            content = strip_think(getattr(result, "content", "") or "")
            if not calls:
                final = content
                stop = "done"
                break
            messages.append(_assistant_tool_message(content, calls, budget.rounds))
            for index, call in enumerate(calls):
                if index >= MAX_TOOL_CALLS_PER_ROUND:
                    answer = f"Error: at most {MAX_TOOL_CALLS_PER_ROUND} tool calls per round; this one was skipped."
                else:
                    answer = run.execute(call)
                run.used_tokens += _count(llm, answer)
                call_id = _call_id(call, budget.rounds, index)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": answer})

        if not final:
            final = self._final_research_report(ctx, llm, messages, budget, stop, locale)

        registered_all = {s.number for s in ctx.sources()}
        allowed = set(run.registered) | _allowed_from_prior(prior, registered_all)
        report = strip_references_section(final)
        report, dropped = filter_citations(report, allowed)
        if not report.strip():
            report = self._digest(run, locale)
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

    def _research_tools(self, run: _ResearchRun) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        by_name = {
            "web_search": WEB_SEARCH_TOOL,
            "fetch_page": FETCH_PAGE_TOOL,
            "knowledge_search": KNOWLEDGE_SEARCH_TOOL,
        }
        for name in run.tool_names():
            tools.append(by_name[name] if name in by_name else run.mcp[name].schema)
        return tools

    def _final_research_report(
        self,
        ctx: AgentContext,
        llm: Any,
        messages: list[dict[str, Any]],
        budget: StepBudget,
        stop: str,
        locale: str,
    ) -> str:
        """Ask for the step report without tools, once the loop is over (budget or endless tool calls)."""
        if stop in {"rounds", "tokens", "time"}:
            ctx.emit("step.activity", {"kind": "think", "text": f"Budget reached ({stop}); writing the step report."})
        messages.append(
            {
                "role": "user",
                "content": _lang(
                    locale,
                    "Stop using tools now. Write the step report from the material gathered above, "
                    "citing fetched sources by their [n] numbers.",
                    "现在停止调用工具。根据上面已收集的材料写出步骤报告，用 [n] 编号引用已抓取的来源。",
                ),
            }
        )
        ctx.check_cancelled()
        result = llm.chat(messages, agent="researcher", tools=None, temperature=0.3)
        budget.spend(result)
        return strip_think(getattr(result, "content", "") or "")

    @staticmethod
    def _digest(run: _ResearchRun, locale: str) -> str:
        """Last resort when the model wrote nothing: list what was gathered, with citations."""
        if not run.registered:
            return ""
        lines = [_lang(locale, "Material gathered for this step:", "本步骤收集到的资料："), ""]
        for number in sorted(run.registered):
            ref = run.registered[number]
            snippet = re.sub(r"\s+", " ", ref.text or "").strip()[:300]
            lines.append(f"- **{ref.title}**: {snippet} [{number}]")
        return "\n".join(lines)

    @staticmethod
    def _emit_thinking(ctx: AgentContext, result: Any) -> None:
        reasoning = (getattr(result, "reasoning", "") or "").strip()
        if reasoning:
            ctx.emit("step.activity", {"kind": "think", "text": reasoning[:300]})

    # ---- coder ---------------------------------------------------------------------------

    def process(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult:
        llm = _require_llm(ctx)
        locale = plan.locale or ctx.locale
        budget = StepBudget.from_options(ctx.options)
        window = _window(llm)
        user = "\n\n".join(
            part
            for part in (
                f"## Question\n{ctx.question.strip()}",
                f"## Locale\n{locale}",
                _plan_outline(plan, descriptions=False),
                _prior_block(llm, prior, window // 3),
                _step_block(step),
                "Write the complete Python program for this step now.",
            )
            if part
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
            content = strip_think(getattr(result, "content", "") or "")
            code, call = self._extract_code(result, content)
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
            feedback = self._run_feedback(run, attempts_left=MAX_CODE_RUNS - len(runs))
            if call is not None:
                messages.append(_assistant_tool_message(content, [call], budget.rounds))
                messages.append({"role": "tool", "tool_call_id": _call_id(call, budget.rounds, 0), "content": feedback})
            else:
                messages.append({"role": "assistant", "content": content})
                messages.append({"role": "user", "content": feedback})
            if run.error or (run.exit_code == 0 and not run.timed_out):
                break

        notes: dict[str, Any] = {"runs": len(runs), "rounds": budget.rounds, "tokens": budget.tokens, "stopped": stop}
        refused = next((r for r in runs if r.error), None)
        if refused is not None:
            notes["sandbox_error"] = refused.error
            report = self._refused_report(refused, codes[-1], locale)
            return StepResult(step.id, step.title, report, figures=[], notes=notes)
        if not runs:
            if not text_only.strip():
                raise EngineError(f"Step {step.id!r}: the coder wrote no Python code, so nothing could be computed.")
            notes["no_code"] = True
            report = text_only
        else:
            last = runs[-1]
            notes["succeeded"] = last.exit_code == 0 and not last.timed_out
            report = text_only or self._coder_summary(ctx, llm, messages, budget, figures, locale)
            if not report.strip():
                report = self._plain_run_report(last, locale)

        registered_all = {s.number for s in ctx.sources()}
        report = strip_references_section(report)
        report, notes["removed_citations"] = filter_citations(report, _allowed_from_prior(prior, registered_all))
        known = figures + [f for f in ctx.figures() if f not in figures]
        report = fix_figure_refs(report, known, add_missing=figures)
        return StepResult(step.id, step.title, report.strip() + "\n", figures=figures, notes=notes)

    @staticmethod
    def _extract_code(result: Any, content: str) -> tuple[str, Any]:
        for call in getattr(result, "tool_calls", None) or []:
            args = getattr(call, "arguments", None)
            if call.name == "run_python" and isinstance(args, dict) and isinstance(args.get("code"), str):
                return args["code"], call
        blocks = [b for b in _CODE_BLOCK.findall(content) if b.strip()]
        return (max(blocks, key=len), None) if blocks else ("", None)

    @staticmethod
    def _run_feedback(run: CodeRun, *, attempts_left: int) -> str:
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

    def _coder_summary(
        self,
        ctx: AgentContext,
        llm: Any,
        messages: list[dict[str, Any]],
        budget: StepBudget,
        figures: list[str],
        locale: str,
    ) -> str:
        figure_list = ", ".join(figures) if figures else _lang(locale, "none", "无")
        messages.append(
            {
                "role": "user",
                "content": _lang(
                    locale,
                    "Now write the step result in Markdown: what was computed and the key numbers. "
                    f"Embed each figure as ![caption](figures/<name>). Figures: {figure_list}.",
                    "现在用 Markdown 写出本步骤的结果：计算了什么、关键数字。"
                    f"每张图用 ![图注](figures/<文件名>) 嵌入。图表：{figure_list}。",
                ),
            }
        )
        ctx.check_cancelled()
        result = llm.chat(messages, agent="coder", tools=None, temperature=0.3)
        budget.spend(result)
        return strip_think(getattr(result, "content", "") or "")

    @staticmethod
    def _plain_run_report(run: CodeRun, locale: str) -> str:
        head = _lang(locale, "Output of the computation:", "计算输出：")
        if run.exit_code != 0 or run.timed_out:
            head = _lang(locale, "The computation failed:", "计算失败：")
        output = (run.stdout.strip() or run.stderr.strip() or "(no output)")[-3000:]
        return f"{head}\n\n```\n{output}\n```"

    @staticmethod
    def _refused_report(run: CodeRun, code: str, locale: str) -> str:
        head = _lang(
            locale,
            f"**The code for this step was not run: {run.error}**\n\nThe analysis that was planned:",
            f"**本步骤的代码未能运行：{run.error}**\n\n原计划执行的分析代码：",
        )
        return f"{head}\n\n```python\n{code.strip()}\n```\n"

    # ---- reporter ------------------------------------------------------------------------

    def report(
        self,
        ctx: AgentContext,
        plan: Plan,
        results: list[StepResult],
        *,
        style: str,
        on_delta: Callable[[str], None],
    ) -> str:
        llm = _require_llm(ctx)
        locale = plan.locale or ctx.locale
        style = style if style in STYLES else "academic"
        sources = ctx.sources()[:MAX_LISTED_SOURCES]
        figures: list[str] = []
        for result in results:
            figures.extend(f for f in result.figures if f not in figures)
        known_figures = figures + [f for f in ctx.figures() if f not in figures]

        source_lines = "\n".join(f"[{s.number}] {s.title[:150]} — {s.url}" for s in sources)
        head = "\n\n".join(
            part
            for part in (
                f"## Question\n{ctx.question.strip()}",
                f"## Locale\n{locale}",
                f"## Style\n{style}",
                _plan_outline(plan),
                "## Sources (cite only these numbers)\n" + (source_lines or "(none)"),
                "## Figures (embed as ![caption](figures/<name>))\n" + "\n".join(f"- {f}" for f in figures)
                if figures
                else "",
            )
            if part
        )
        system = load_prompt("reporter", locale)
        room = _window(llm) - _count(llm, system) - _count(llm, head) - max(ANSWER_RESERVE, _window(llm) // 4)
        bodies = fit_texts(llm, [r.report_md for r in results], max(room, 300 * max(1, len(results))))
        steps = "\n\n".join(
            f"### [{r.step_id}] {r.title}\n{body.strip()}" for r, body in zip(results, bodies, strict=True)
        )
        user = f"{head}\n\n## Step results\n{steps or '(none)'}\n\n" + _lang(
            locale,
            f"Write the final report now in the {style} style. Start with '# ' and a title. No references section.",
            f"现在以 {style} 风格写出最终报告。以 '# ' 加标题开头。不要写参考文献部分。",
        )
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]

        ctx.check_cancelled()
        stream = _DeltaFilter(on_delta)
        result = llm.chat(messages, agent="reporter", temperature=0.4, on_delta=stream.feed)
        stream.flush()
        text = strip_think(getattr(result, "content", "") or "")
        text = strip_references_section(text)
        if not text.strip():
            raise EngineError("The reporter returned an empty report.")
        text = ensure_title(text, plan.title)
        text = fix_figure_refs(text, known_figures, add_missing=figures, heading=_lang(locale, "## Figures", "## 图表"))
        return text.strip() + "\n"

    # ---- podcast and slides --------------------------------------------------------------

    def podcast_script(self, ctx: AgentContext, report_md: str) -> PodcastScript:
        llm = _require_llm(ctx)
        locale = detect_locale(report_md[:4000], default=ctx.locale or "en-US")
        messages = self._render_messages(llm, "podcast", locale, report_md, ctx.figures())
        try:
            script = llm.structured(messages, PodcastScript, agent="podcast")
        except _structured_output_error() as exc:
            logger.warning("podcast script from the model failed (%s); deriving it from the report", exc)
            from research.render.derive import podcast_script_from_markdown

            return podcast_script_from_markdown(report_md, locale=locale)
        lines = [line.model_copy(update={"text": strip_think(line.text)}) for line in script.lines]
        lines = [line for line in lines if line.text.strip()]
        if not lines:
            from research.render.derive import podcast_script_from_markdown

            return podcast_script_from_markdown(report_md, locale=locale)
        return script.model_copy(update={"locale": locale, "lines": lines})

    def slide_outline(self, ctx: AgentContext, report_md: str) -> SlideOutline:
        llm = _require_llm(ctx)
        locale = detect_locale(report_md[:4000], default=ctx.locale or "en-US")
        figures = ctx.figures()
        messages = self._render_messages(llm, "slides", locale, report_md, figures)
        try:
            outline = llm.structured(messages, SlideOutline, agent="slides")
        except _structured_output_error() as exc:
            logger.warning("slide outline from the model failed (%s); deriving it from the report", exc)
            from research.render.derive import slide_outline_from_markdown

            return slide_outline_from_markdown(report_md, locale=locale)
        known = set(figures) | {m.group(2) for m in _FIGURE_REF.finditer(report_md)}
        slides = []
        for slide in outline.slides:
            figure = (slide.figure or "").removeprefix("figures/") or None
            slides.append(slide.model_copy(update={"figure": figure if figure in known else None}))
        if not slides:
            from research.render.derive import slide_outline_from_markdown

            return slide_outline_from_markdown(report_md, locale=locale)
        return outline.model_copy(update={"slides": slides})

    @staticmethod
    def _render_messages(
        llm: Any, agent: str, locale: str, report_md: str, figures: Sequence[str]
    ) -> list[dict[str, Any]]:
        system = load_prompt(agent, locale)
        room = _window(llm) - _count(llm, system) - ANSWER_RESERVE * 2
        body = truncate_tokens(llm, report_md, max(room, 1000))
        figure_block = ("## Figures\n" + "\n".join(f"- {f}" for f in figures) + "\n\n") if figures else ""
        user = f"## Locale\n{locale}\n\n{figure_block}## Report\n{body}"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class _DeltaFilter:
    """Passes streamed report text on, minus <think>…</think> spans (even when a tag is split across pieces)."""

    _OPEN = "<think>"
    _CLOSE = "</think>"

    def __init__(self, sink: Callable[[str], None]) -> None:
        self.sink = sink
        self.buffer = ""
        self.thinking = False

    def feed(self, piece: str) -> None:
        self.buffer += piece or ""
        out: list[str] = []
        while self.buffer:
            if self.thinking:
                end = self.buffer.find(self._CLOSE)
                if end < 0:
                    self.buffer = self.buffer[-(len(self._CLOSE) - 1) :]
                    break
                self.buffer = self.buffer[end + len(self._CLOSE) :]
                self.thinking = False
                continue
            start = self.buffer.find(self._OPEN)
            if start >= 0:
                out.append(self.buffer[:start])
                self.buffer = self.buffer[start + len(self._OPEN) :]
                self.thinking = True
                continue
            keep = _partial_tag_suffix(self.buffer, self._OPEN)
            out.append(self.buffer[: len(self.buffer) - keep])
            self.buffer = self.buffer[len(self.buffer) - keep :]
            break
        text = "".join(out)
        if text:
            self.sink(text)

    def flush(self) -> None:
        if not self.thinking and self.buffer:
            self.sink(self.buffer)
        self.buffer = ""


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag` (a tag split across pieces)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
