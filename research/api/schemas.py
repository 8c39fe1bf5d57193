"""Request and response bodies of the API (pydantic, via django-ninja), which the OpenAPI document describes.

Input fields carry the limits the services enforce (lengths, ranges, "not blank", no NUL, which PostgreSQL
cannot store), so a request the schema allows is one the API accepts; what a schema cannot say (a rule
across fields, the job's state) is documented on the operation's 400 and 409 answers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool

from research.agents.depth import MAX_RUNS
from research.render.formats import OutputKind

MAX_ID = 2**63 - 1  # ids and counters are 64-bit integers in the database
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
# NO_NUL: any characters but NUL. NOT_BLANK: the same, with at least one character str.strip() keeps.
NO_NUL = "^[^\\x00]*$"
NOT_BLANK = ("^[^\\x00]*[^\\x00-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
             "[^\\x00]*$")


def _json_int(value: Any) -> Any:
    """JSON's integers: 3 and 3.0 (the same number to JSON Schema), never true or "3"."""
    if isinstance(value, bool | str):
        raise ValueError("Input should be an integer")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Request bodies take JSON types as the schema states them: pydantic's lax mode would take 0 for false
# and "5" for 5, which the schema does not allow.
Bool = StrictBool
# The range first: pydantic then states it as minimum/maximum in the JSON schema.
IdInt = Annotated[int, Field(ge=1, le=MAX_ID), BeforeValidator(_json_int)]
StepsInt = Annotated[int, Field(ge=1, le=settings.JOB_MAX_STEPS), BeforeValidator(_json_int)]
RunsInt = Annotated[int, Field(ge=1, le=MAX_RUNS), BeforeValidator(_json_int)]


class JobCreateIn(Schema):
    # A job without web search needs a knowledge base: said in the schema, so generated requests respect it.
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"web": {"const": False}}, "required": ["web"]},
        "then": {"properties": {"kb": {"type": "integer"}}, "required": ["kb"]},
    })

    question: str = Field(min_length=1, max_length=4000, pattern=NOT_BLANK,
                          description="The research question (at most 4000 characters, not blank).")
    style: Literal["academic", "popular_science", "news", "social_media"] = "academic"
    locale: str = Field("auto", pattern="^(auto|[a-z]{2,3}(-[A-Za-z]{2,4})?)$",
                        description="Report language: auto (same as the question), en-US, zh-CN, …")
    max_steps: StepsInt | None = Field(None,
                                  description="Most plan steps (default from the server settings).")
    outputs: list[OutputKind] = Field(default=["md"])  # pydantic copies defaults
    auto_accept: Bool = Field(False, description="Run the plan without review.")
    engine: Literal["auto", "llm", "offline"] | None = None
    kb: IdInt | None = Field(None, description="Id of one of your knowledge bases to search "
                                                               "(required when web is false; another's: 404).")
    web: Bool = Field(True, description="Search the web.")
    background: Bool = Field(False, description="Quick background search before planning.")
    clarify: Bool | None = Field(None, description="Let the model ask up to 3 clarifying questions first "
                                                   "(default: on unless the engine is offline).")
    direct_answer: Bool = Field(True, description="false: never end with a short direct answer; always research.")
    depth: Literal["standard", "heavy"] = Field("standard", description="heavy: several parallel runs per "
                                                "research step, merged by a synthesis pass (slower, costlier).")
    runs: RunsInt | None = Field(None, description="Parallel runs per research step in heavy mode (1-5, default 3).")


class PlanStepIn(Schema):
    id: str = Field(max_length=40, pattern="^[-a-zA-Z0-9_]+$", description="A slug, unique in the plan.")
    title: str = Field(min_length=1, max_length=300, pattern=NOT_BLANK)
    description: str = Field("", max_length=4000, pattern=NO_NUL)
    step_type: Literal["research", "analysis", "processing"] = "research"
    need_search: Bool = True
    depends_on: list[Annotated[str, Field(max_length=40, pattern="^[-a-zA-Z0-9_]+$")]] = Field(
        default_factory=list, max_length=20, description="Ids of earlier steps of this plan.")


class PlanIn(Schema):
    title: str = Field(min_length=1, max_length=300, pattern=NOT_BLANK)
    steps: list[PlanStepIn] = Field(min_length=1, max_length=settings.JOB_MAX_STEPS)


class PlanSubmitIn(Schema):
    base_version: IdInt = Field(description="The plan version you are answering "
                                                             "(stale versions get 409).")
    action: Literal["accept", "replan"] = "accept"
    feedback: str = Field("", max_length=4000, pattern=NO_NUL,
                          description="What the planner should change (required for replan: else 400).")
    plan: PlanIn | None = Field(None, description="Your edited plan; omit to accept the plan as written. "
                                                  "Checked by the web editor's rules (400 with the reasons).")
    depth: Literal["standard", "heavy"] | None = Field(None, description="Change the job's depth on accept.")
    runs: RunsInt | None = Field(None, description="Parallel runs per research step (heavy, 1-5).")


class ClarifyIn(Schema):
    answers: list[Annotated[str, Field(max_length=1000, pattern=NO_NUL)]] = Field(
        default_factory=list, max_length=10,
        description="One answer per question, in order (at least one not blank unless skip: else 400).")
    skip: Bool = Field(False, description="Skip the questions and plan from the question as written.")


class FollowUpIn(Schema):
    question: str = Field(min_length=1, max_length=2000, pattern=NOT_BLANK,
                          description="A question about the finished report (at most 2000 characters).")


class FollowUpOut(Schema):
    number: int
    question: str
    status: str = Field(description="pending, running, done or failed")
    answer: str = Field(description="Markdown with checked citations and its own references list.")
    error: str | None
    added_sources: int
    folded_into: int | None = Field(description="The report version that includes this answer.")


class StepRunOut(Schema):
    index: int = Field(description="0-based position among the step's parallel runs (heavy mode)")
    status: str
    attempts: int
    emphasis: str
    opening_query: str
    sources: int
    chars: int
    error: str | None


class StepOut(Schema):
    id: str
    title: str
    description: str
    type: str
    status: str
    attempts: int
    depends_on: list[str]
    error: str | None
    runs: list[StepRunOut] = Field(default_factory=list, description="Heavy mode: the step's parallel runs.")


class ArtifactOut(Schema):
    name: str
    kind: str
    size: int
    sha256: str
    url: str


class PlanOut(Schema):
    version: int
    author: str
    accepted: bool
    plan: dict[str, Any]


class ReportOut(Schema):
    version: int
    author: str
    markdown: str


class SourceOut(Schema):
    number: int
    url: str
    title: str
    kind: str


class OutputOut(Schema):
    status: str
    error: str | None


class JobOut(Schema):
    id: int
    status: str
    question: str
    title: str
    engine: str
    options: dict[str, Any]
    answer: str | None
    error: str | None
    created: datetime
    started_at: datetime | None
    finished_at: datetime | None
    last_event_seq: int
    plan: PlanOut | None
    steps: list[StepOut]
    outputs: dict[str, OutputOut]
    artifacts: list[ArtifactOut]
    report: ReportOut | None
    sources: list[SourceOut]
    url: str
    clarify_questions: list[str]
    clarifications: list[dict[str, str]]


class JobBriefOut(Schema):
    id: int
    status: str
    question: str
    title: str
    created: datetime


class EventOut(Schema):
    seq: int
    type: str
    payload: dict[str, Any]
    ts: float


class EventsOut(Schema):
    status: str
    events: list[EventOut]


class ErrorOut(Schema):
    detail: str
    errors: list[str] = Field(default_factory=list)
