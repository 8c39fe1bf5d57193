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
from pydantic import ConfigDict, Field

from research.jobs.options import MAX_ID, Bool, IdInt, JobOptionsBase, RunsInt

Id = Annotated[int, Field(ge=1, le=MAX_ID)]
# NO_NUL: any characters but NUL. NOT_BLANK: the same, with at least one character str.strip() keeps.
NO_NUL = "^[^\\x00]*$"
NOT_BLANK = ("^[^\\x00]*[^\\x00-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
             "[^\\x00]*$")


# The question and the options; the options are research.jobs.options' shared model, so the API refuses (422)
# exactly what the web form, the CLI and the MCP tool refuse. (A comment, not a docstring: that would change the
# OpenAPI document.)
class JobCreateIn(Schema, JobOptionsBase):

    # A job without web search needs a knowledge base: said in the schema, so generated requests respect it.
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"web": {"const": False}}, "required": ["web"]},
        "then": {"properties": {"kb": {"type": "integer"}}, "required": ["kb"]},
    })

    question: str = Field(min_length=1, max_length=4000, pattern=NOT_BLANK,
                          description="The research question (at most 4000 characters, not blank).")
    clarify: Bool | None = Field(default=None, description="Let the model ask up to 3 clarifying questions first "
                                                   "(default: on unless the engine is offline).")


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
    plan: PlanIn | None = Field(default=None, description="Your edited plan; omit to accept the plan as written. "
                                                  "Checked by the web editor's rules (400 with the reasons).")
    depth: Literal["standard", "heavy"] | None = Field(default=None, description="Change the job's depth on accept.")
    runs: RunsInt | None = Field(default=None, description="Parallel runs per research step (heavy, 1-5).")


class ClarifyIn(Schema):
    answers: list[Annotated[str, Field(max_length=1000, pattern=NO_NUL)]] = Field(
        default_factory=list, max_length=10,
        description="One answer per question, in order (at least one not blank unless skip: else 400).")
    skip: Bool = Field(default=False, description="Skip the questions and plan from the question as written.")


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
