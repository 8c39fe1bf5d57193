"""Request and response bodies of the API (pydantic, via django-ninja), which the OpenAPI document describes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import Field


class JobCreateIn(Schema):
    question: str = Field(description="The research question (at most 4000 characters).")
    style: Literal["academic", "popular_science", "news", "social_media"] = "academic"
    locale: str = Field("auto", description="Report language: auto (same as the question), en-US, zh-CN, …")
    max_steps: int | None = Field(None, description="Most plan steps (default from the server settings).")
    outputs: list[Literal["md", "pdf", "pptx", "podcast"]] = Field(default=["md"])  # pydantic copies defaults
    auto_accept: bool = Field(False, description="Run the plan without review.")
    engine: Literal["auto", "llm", "offline"] | None = None
    kb: int | None = Field(None, description="Id of one of your knowledge bases to search.")
    web: bool = Field(True, description="Search the web.")
    background: bool = Field(False, description="Quick background search before planning.")
    clarify: bool | None = Field(None, description="Let the model ask up to 3 clarifying questions first "
                                                   "(default: on unless the engine is offline).")
    direct_answer: bool = Field(True, description="false: never end with a short direct answer; always research.")
    depth: Literal["standard", "heavy"] = Field("standard", description="heavy: several parallel runs per "
                                                "research step, merged by a synthesis pass (slower, costlier).")
    runs: int | None = Field(None, ge=1, le=5, description="Parallel runs per research step in heavy mode "
                                                            "(1-5, default 3).")


class PlanStepIn(Schema):
    id: str
    title: str
    description: str = ""
    step_type: Literal["research", "analysis", "processing"] = "research"
    need_search: bool = True
    depends_on: list[str] = Field(default_factory=list)


class PlanIn(Schema):
    title: str
    steps: list[PlanStepIn]


class PlanSubmitIn(Schema):
    base_version: int = Field(description="The plan version you are answering (stale versions get 409).")
    action: Literal["accept", "replan"] = "accept"
    feedback: str = Field("", description="What the planner should change (required for replan).")
    plan: PlanIn | None = Field(None, description="Your edited plan; omit to accept the plan as written.")
    depth: Literal["standard", "heavy"] | None = Field(None, description="Change the job's depth on accept.")
    runs: int | None = Field(None, ge=1, le=5, description="Parallel runs per research step (heavy).")


class ClarifyIn(Schema):
    answers: list[str] = Field(default_factory=list, description="One answer per question, in order.")
    skip: bool = Field(False, description="Skip the questions and plan from the question as written.")


class FollowUpIn(Schema):
    question: str = Field(description="A question about the finished report (at most 2000 characters).")


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
