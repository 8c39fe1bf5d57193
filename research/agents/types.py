"""Small typed state shared by the graph, the engines and the renderers.

The Plan, PodcastScript and SlideOutline models are contracts (docs/architecture.md, "Contracts").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from research.llm.types import ChatResult

M = TypeVar("M", bound=BaseModel)

StepType = Literal["research", "analysis", "processing"]
ReportStyle = Literal["academic", "popular_science", "news", "social_media"]
STYLES: tuple[str, ...] = ("academic", "popular_science", "news", "social_media")


class PlanStep(BaseModel):
    id: str = Field(min_length=1, max_length=40)
    title: str = Field(min_length=1, max_length=300)
    description: str = Field(default="", max_length=4000)
    step_type: StepType = "research"
    need_search: bool = True
    depends_on: list[str] = Field(default_factory=list)


class Plan(BaseModel):
    locale: str = "en-US"
    title: str = Field(min_length=1, max_length=300)
    thought: str = ""
    has_enough_context: bool = False
    steps: list[PlanStep] = Field(default_factory=list)


class PodcastLine(BaseModel):
    speaker: Literal["host", "guest"]
    text: str = Field(min_length=1)
    section: str = ""  # section title, used for ID3 chapters


class PodcastScript(BaseModel):
    locale: str = "en-US"
    title: str = ""
    lines: list[PodcastLine] = Field(min_length=1)


class Slide(BaseModel):
    title: str
    bullets: list[str] = Field(default_factory=list, max_length=5)
    notes: str = ""
    figure: str | None = None  # file name of a job figure
    table: list[list[str]] | None = None  # small table: header row first


class SlideOutline(BaseModel):
    title: str
    subtitle: str = ""
    slides: list[Slide] = Field(default_factory=list)


@dataclass
class SearchHit:
    title: str
    url: str
    snippet: str = ""
    provider: str = ""


@dataclass
class SourceRef:
    """A source registered for a job. `number` is its one global citation number."""

    number: int
    url: str
    title: str
    text: str = ""
    kind: str = "web"  # web | kb


@dataclass
class CodeRun:
    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    figures: list[str] = field(default_factory=list)  # saved figure file names
    error: str = ""  # set when the sandbox refused to run (fails closed)


@dataclass
class StepResult:
    step_id: str
    title: str
    report_md: str  # cites sources as [n] with their global numbers
    figures: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunVariant:
    """One of the k parallel runs of a step in heavy mode (docs/agents.md, "Depth").

    Runs of one step are steered apart: each gets its own index, seed and source-type emphasis, and
    may be given its own opening query. `None` where a node takes a variant means a standard run.
    """

    index: int  # 0-based position among the step's runs
    count: int  # k, the number of runs of the step
    seed: int = 0
    emphasis: str = ""  # e.g. "official statistics and primary data"; shown to the run as a focus
    opening_query: str = ""  # the run's first search, when the scheduler chose one


MAX_CLARIFY_QUESTIONS = 3


def clarifications_text(options: dict[str, Any]) -> str:
    """The user's answers to the coordinator's questions, as a prompt section ("" when none)."""
    pairs = options.get("clarifications") or []
    lines = [f"- Q: {p['question']}\n  A: {p['answer']}" for p in pairs if isinstance(p, dict) and p.get("answer")]
    return ("## Clarifications from the user\n" + "\n".join(lines)) if lines else ""


@dataclass
class CoordinatorDecision:
    action: Literal["answer", "research", "clarify"]
    locale: str
    answer: str = ""  # the direct answer (greeting) or the clarification question
    questions: list[str] = field(default_factory=list)  # clarify: up to MAX_CLARIFY_QUESTIONS short questions


@dataclass(frozen=True)
class McpToolSpec:
    """A tool of an operator-configured MCP server, as the context lists it."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]


class JobCancelled(Exception):
    """Raised by AgentContext.check_cancelled() when the user cancelled the job."""


class BudgetExceeded(Exception):
    """A step or job ran out of rounds, tokens or time."""


class ToolError(Exception):
    """A tool failed in a way the agent should see and may work around."""


class ChatModel(Protocol):
    """The calls the nodes make of the model (`AgentContext.llm`). research.llm.client.LLMClient implements it
    (mypy checks that where the jobs app hands one out: research/jobs/units/context.py). `agent` names the
    node for cost accounting."""

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        agent: str = "",
        tools: list[dict[str, Any]] | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
        seed: int | None = None,
    ) -> ChatResult: ...

    def structured(
        self,
        messages: list[dict[str, Any]],
        schema: type[M],
        *,
        agent: str = "",
        max_attempts: int = 3,
        temperature: float = 0.2,
        max_tokens: int | None = None,
    ) -> M: ...  # raises research.llm.types.StructuredOutputError

    def count_tokens(self, text: str) -> int: ...

    def context_window(self) -> int: ...


class AgentContext(Protocol):
    """What a node may do. The jobs app implements it over the database and tools."""

    job_id: int
    question: str
    locale: str
    options: dict[str, Any]
    step_id: str | None

    @property
    def llm(self) -> ChatModel | None: ...  # research.llm.client.LLMClient; None for the offline engine

    def emit(self, type: str, payload: dict[str, Any]) -> None: ...

    def check_cancelled(self) -> None: ...  # raises JobCancelled; also renews the lease

    def search(self, query: str, *, max_results: int = 8) -> list[SearchHit]: ...

    def fetch(self, url: str) -> SourceRef: ...  # raises ToolError; registers the source

    def kb_search(self, query: str, *, limit: int = 5) -> list[SourceRef]: ...  # registers hits

    def run_python(self, code: str) -> CodeRun: ...

    def sources(self) -> list[SourceRef]: ...

    def figures(self) -> list[str]: ...

    def mcp_tools(self) -> list[McpToolSpec]: ...  # the MCP tools this job may use (cached listing)

    def mcp_call(self, server: str, tool: str, arguments: dict[str, Any]) -> str: ...  # raises ToolError


class Engine(Protocol):
    """The text-producing functions. `llm` and `offline` differ only here."""

    name: str

    def coordinate(self, ctx: AgentContext) -> CoordinatorDecision: ...

    def plan(
        self,
        ctx: AgentContext,
        *,
        max_steps: int,
        background: str = "",
        feedback: str = "",
        previous: Plan | None = None,
    ) -> Plan: ...

    def research(
        self,
        ctx: AgentContext,
        step: PlanStep,
        plan: Plan,
        prior: list[StepResult],
        *,
        variant: RunVariant | None = None,
    ) -> StepResult: ...

    def synthesize(self, ctx: AgentContext, step: PlanStep, plan: Plan, runs: list[StepResult]) -> StepResult:
        """Heavy mode: merge the successful runs of a step into its finding (research.agents.synthesis)."""
        ...

    def process(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult: ...

    def report(
        self,
        ctx: AgentContext,
        plan: Plan,
        results: list[StepResult],
        *,
        style: str,
        on_delta: Callable[[str], None],
    ) -> str: ...

    def podcast_script(self, ctx: AgentContext, report_md: str) -> PodcastScript: ...

    def slide_outline(self, ctx: AgentContext, report_md: str) -> SlideOutline: ...
