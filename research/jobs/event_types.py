"""Every event type a job emits and its payload, declared once.

`EVENTS` maps each type to its payload (a TypedDict; `NotRequired` keys may be left out) and a line of
meaning. `event_emit` (events.py) calls `event_check`: a type missing here, or a payload with a key or a
value type its declaration does not have, raises `UndeclaredEvent` where `settings.EVENTS_STRICT` is on (the
tests) and is logged as an error elsewhere (an event is never lost over it). The table of event types in
docs/architecture.md is generated from these declarations (`event_table_markdown`; a test compares them).

No Django imports: scripts can render the table without settings.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal, NamedTuple, NotRequired, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, Field, TypeAdapter, with_config
from pydantic import ValidationError as PydanticError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

FORBID = ConfigDict(extra="forbid")


class UndeclaredEvent(ValueError):
    """An event type that research/jobs/event_types.py does not declare, or a payload that does not match."""


# --- the job ---------------------------------------------------------------------------------


@with_config(FORBID)
class JobStatusPayload(TypedDict):
    status: str
    error: NotRequired[str]


@with_config(FORBID)
class JobEnginePayload(TypedDict):
    engine: str
    reason: str


@with_config(FORBID)
class JobWaitingPayload(TypedDict):
    reason: str
    message: str


@with_config(FORBID)
class JobDonePayload(TypedDict):
    answer: NotRequired[str]


@with_config(FORBID)
class ErrorPayload(TypedDict):
    error: str


@with_config(FORBID)
class EmptyPayload(TypedDict):
    pass


@with_config(FORBID)
class AnswerPayload(TypedDict):
    answer: str


@with_config(FORBID)
class ClarifyAskedPayload(TypedDict):
    questions: list[str]


@with_config(FORBID)
class ClarifyAnsweredPayload(TypedDict):
    skipped: bool
    answers: list[dict[str, str]]


@with_config(FORBID)
class ProviderErrorFields(TypedDict):
    """A search provider's typed failure (research.tools.search.ProviderError.as_dict)."""

    provider: str
    label: str
    kind: str
    status: int | None
    message: str


@with_config(FORBID)
class SearchCheckedPayload(TypedDict):
    ok: bool  # something can be searched: a web provider answered, or a knowledge base is attached
    reasons: list[list[str]]
    errors: NotRequired[list[ProviderErrorFields]]
    kb: bool
    web: bool
    web_ok: NotRequired[bool]  # a web provider answered (issue 33; absent from events written before)


# --- the plan --------------------------------------------------------------------------------


@with_config(FORBID)
class PlanVersionPayload(TypedDict):
    version: int
    author: str
    plan: dict[str, Any]


@with_config(FORBID)
class PlanAcceptedPayload(TypedDict):
    version: int
    steps: list[str]


# --- steps and heavy mode's runs -------------------------------------------------------------


@with_config(FORBID)
class StepPayload(TypedDict):
    step: str


@with_config(FORBID)
class StepQueuedPayload(TypedDict):
    step: str
    synthesis: NotRequired[bool]


@with_config(FORBID)
class StepStartedPayload(TypedDict):
    step: str
    title: str
    type: str
    attempt: NotRequired[int]
    runs: NotRequired[int]


@with_config(FORBID)
class StepSynthesizingPayload(TypedDict):
    step: str
    title: str
    type: str
    attempt: int


@with_config(FORBID)
class StepCompletedPayload(TypedDict):
    step: str
    figures: list[str]
    chars: int
    finding: str
    synthesized: NotRequired[bool]
    runs: NotRequired[int]
    lost: NotRequired[int]


@with_config(FORBID)
class StepFailedPayload(TypedDict):
    step: str
    error: str


@with_config(FORBID)
class StepRequeuedPayload(TypedDict):
    step: str
    attempt: int
    reason: str


@with_config(FORBID)
class RunPayload(TypedDict):
    step: str
    run: int


@with_config(FORBID)
class RunQueuedPayload(TypedDict):
    step: str
    run: int
    runs: int
    emphasis: str


@with_config(FORBID)
class RunStartedPayload(TypedDict):
    step: str
    run: int
    attempt: int
    emphasis: str


@with_config(FORBID)
class RunCompletedPayload(TypedDict):
    step: str
    run: int
    chars: int
    finding: str
    sources: int | None
    searches: int | None


@with_config(FORBID)
class RunFailedPayload(TypedDict):
    step: str
    run: int
    error: str


@with_config(FORBID)
class RunRequeuedPayload(TypedDict):
    step: str
    run: int
    attempt: int
    reason: str


# step.activity: one payload per `kind`. `step` and `run` (heavy mode) name where it happened; the stage-level
# ones (the background search) have neither.


class _Where(TypedDict):
    step: NotRequired[str | None]
    run: NotRequired[int]


@with_config(FORBID)
class ActivitySearch(_Where):
    kind: Literal["search"]
    query: str
    error: NotRequired[str]


@with_config(FORBID)
class ActivitySearchResults(_Where):
    kind: Literal["search_results"]
    query: str
    count: int
    urls: list[str]


@with_config(FORBID)
class ActivityProviderError(_Where):
    kind: Literal["provider_error"]
    provider: str
    error: str
    # The typed error's fields; events stored before errors were typed have none of them.
    label: NotRequired[str]
    error_kind: NotRequired[str]
    status: NotRequired[int | None]


@with_config(FORBID)
class ActivityFetch(_Where):
    kind: Literal["fetch"]
    url: str


@with_config(FORBID)
class ActivityFetchFailed(_Where):
    kind: Literal["fetch_failed"]
    url: str
    error: str


@with_config(FORBID)
class ActivityKb(_Where):
    kind: Literal["kb"]
    query: str
    count: NotRequired[int]
    error: NotRequired[str]


@with_config(FORBID)
class ActivityCode(_Where):
    kind: Literal["code"]
    lines: int


@with_config(FORBID)
class ActivityCodeResult(_Where):
    kind: Literal["code_result"]
    exit_code: int
    timed_out: bool
    figures: list[str]
    stdout: str


@with_config(FORBID)
class ActivityCodeRefused(_Where):
    kind: Literal["code_refused"]
    error: str


@with_config(FORBID)
class ActivityThink(_Where):
    kind: Literal["think"]
    text: str


@with_config(FORBID)
class ActivityTool(_Where):
    kind: Literal["tool"]
    name: str
    server: str


@with_config(FORBID)
class ActivityBackgroundFailed(_Where):
    kind: Literal["background_failed"]
    error: str


@with_config(FORBID)
class ActivitySynthesis(_Where):
    kind: Literal["synthesis"]
    runs: int
    lost: int


@with_config(FORBID)
class ActivityRank(_Where):
    kind: Literal["rank"]
    candidates: int
    selected: int


@with_config(FORBID)
class ActivityReadMore(_Where):
    kind: Literal["read_more"]
    reason: str  # why the step reads further (its part has no answer yet), in the job's language
    pages: int  # pages read so far


StepActivityPayload = Annotated[
    ActivitySearch | ActivitySearchResults | ActivityProviderError | ActivityFetch | ActivityFetchFailed
    | ActivityKb | ActivityCode | ActivityCodeResult | ActivityCodeRefused | ActivityThink | ActivityTool
    | ActivityBackgroundFailed | ActivitySynthesis | ActivityRank | ActivityReadMore,
    Field(discriminator="kind"),
]


@with_config(FORBID)
class SourceAddedPayload(TypedDict):
    number: int
    url: str
    title: str
    kind: str
    step: str | None
    run: NotRequired[int]


# --- the report and its outputs --------------------------------------------------------------


@with_config(FORBID)
class ReportStartedPayload(TypedDict):
    steps: int
    failed_steps: int


@with_config(FORBID)
class TextPayload(TypedDict):
    text: str


@with_config(FORBID)
class ReportReadyPayload(TypedDict):
    version: int
    check: dict[str, int]
    cited: NotRequired[list[int]]
    removed_citations: NotRequired[int]
    chars: NotRequired[int]
    author: NotRequired[str]


@with_config(FORBID)
class ReportCheckingPayload(TypedDict):
    check: int
    chars: int


@with_config(FORBID)
class ReportCheckFailedPayload(TypedDict):
    check: int
    error: str


@with_config(FORBID)
class ReportCheckRequeuedPayload(TypedDict):
    check: int
    attempt: int
    reason: str


@with_config(FORBID)
class ArtifactStartedPayload(TypedDict):
    kind: str


@with_config(FORBID)
class ArtifactReadyPayload(TypedDict):
    kind: str
    name: str
    size: int
    seconds: NotRequired[float]


@with_config(FORBID)
class ArtifactFailedPayload(TypedDict):
    kind: str
    error: str


# --- follow-up questions ---------------------------------------------------------------------


@with_config(FORBID)
class FollowupAskedPayload(TypedDict):
    number: int
    question: str


@with_config(FORBID)
class FollowupDeltaPayload(TypedDict):
    number: int
    text: str


@with_config(FORBID)
class FollowupDonePayload(TypedDict):
    number: int
    cited: list[int]
    removed_citations: int
    added_sources: int


@with_config(FORBID)
class FollowupFailedPayload(TypedDict):
    number: int
    error: str


@with_config(FORBID)
class FollowupRequeuedPayload(TypedDict):
    number: int
    attempt: int
    reason: str


@with_config(FORBID)
class FollowupSearch(_Where):
    kind: Literal["search"]
    query: str
    count: int


@with_config(FORBID)
class FollowupSearchFailed(_Where):
    kind: Literal["search_failed"]
    error: str


@with_config(FORBID)
class FollowupFetchFailed(_Where):
    kind: Literal["fetch_failed"]
    url: str
    error: str


FollowupActivityPayload = Annotated[FollowupSearch | FollowupSearchFailed | FollowupFetchFailed,
                                    Field(discriminator="kind")]


class EventSpec(NamedTuple):
    payload: Any  # a TypedDict, or an annotated union of them told apart by `kind`
    meaning: str


EVENTS: dict[str, EventSpec] = {
    "job.status": EventSpec(JobStatusPayload, "The job's status changed (`error` when it failed)."),
    "job.engine": EventSpec(JobEnginePayload, "The `auto` engine chose `llm` or `offline`, and why."),
    "job.done": EventSpec(JobDonePayload, "The job ended well; `answer` when the coordinator answered directly."),
    "job.failed": EventSpec(ErrorPayload, "The job failed, with the reason shown to the user."),
    "job.cancelling": EventSpec(EmptyPayload, "Cancel was asked while units run; they stop at their next check."),
    "job.waiting": EventSpec(JobWaitingPayload, "The job waits for one of its owner's running jobs to end (fair "
                                                "share, `reason` `running_jobs`); `message` says so."),
    "job.research_anyway": EventSpec(AnswerPayload, "The user asked for research after a direct answer."),
    "clarify.asked": EventSpec(ClarifyAskedPayload, "The coordinator asks clarifying questions."),
    "clarify.answered": EventSpec(ClarifyAnsweredPayload, "The user answered them (`[{question, answer}]`) or "
                                                          "skipped them."),
    "search.checked": EventSpec(SearchCheckedPayload, "Whether anything can be searched when the plan is made "
                                                      "or a knowledge base is attached (`ok`; `web_ok`: a web "
                                                      "provider answered; `kb`: a knowledge base is attached; "
                                                      "`reasons`: `[provider, message]` pairs; `errors`: each "
                                                      "provider's typed failure: `provider`, `label`, `kind`, "
                                                      "`status`, `message`); the plan form warns when not."),
    "plan.ready": EventSpec(PlanVersionPayload, "The planner wrote a plan version."),
    "plan.updated": EventSpec(PlanVersionPayload, "The user edited the plan (a new version)."),
    "plan.accepted": EventSpec(PlanAcceptedPayload, "A plan version was accepted; its steps are made."),
    "step.queued": EventSpec(StepQueuedPayload, "A step was queued (`synthesis`: a heavy step queued to merge "
                                                "its runs)."),
    "step.started": EventSpec(StepStartedPayload, "A worker started a step (`runs`: a heavy step fanned out)."),
    "step.synthesizing": EventSpec(StepSynthesizingPayload, "Heavy mode: a step merges its runs."),
    "step.activity": EventSpec(StepActivityPayload, "What a step (or a stage) is doing, by `kind`."),
    "step.completed": EventSpec(StepCompletedPayload, "A step wrote its report (`synthesized`, `runs`, `lost`: "
                                                      "a heavy step's merge)."),
    "step.failed": EventSpec(StepFailedPayload, "A step failed."),
    "step.cancelled": EventSpec(StepPayload, "A step was cancelled."),
    "step.requeued": EventSpec(StepRequeuedPayload, "A step's worker was lost; the step runs again."),
    "run.queued": EventSpec(RunQueuedPayload, "Heavy mode: one of a step's parallel runs was queued "
                                              "(`run`: its 0-based index)."),
    "run.started": EventSpec(RunStartedPayload, "Heavy mode: a run started."),
    "run.completed": EventSpec(RunCompletedPayload, "Heavy mode: a run ended with its finding."),
    "run.failed": EventSpec(RunFailedPayload, "Heavy mode: a run failed."),
    "run.cancelled": EventSpec(RunPayload, "Heavy mode: a run was cancelled."),
    "run.requeued": EventSpec(RunRequeuedPayload, "Heavy mode: a run's worker was lost; it runs again."),
    "source.added": EventSpec(SourceAddedPayload, "A source got its number (fetched page or knowledge-base hit)."),
    "report.started": EventSpec(ReportStartedPayload, "The reporter started writing."),
    "report.delta": EventSpec(TextPayload, "Batched text of the report as it is written."),
    "report.ready": EventSpec(ReportReadyPayload, "A report version is stored (`author`: `user` for an edit; "
                                                  "`check`: the claim check's counts)."),
    "report.checking": EventSpec(ReportCheckingPayload, "A long report edit goes to a worker to be checked."),
    "report.check_failed": EventSpec(ReportCheckFailedPayload, "That check failed; the edit was not saved."),
    "report.check_requeued": EventSpec(ReportCheckRequeuedPayload, "That check's worker was lost; it runs again."),
    "artifact.started": EventSpec(ArtifactStartedPayload, "An output started rendering."),
    "artifact.ready": EventSpec(ArtifactReadyPayload, "A file is ready (`seconds`: how long it rendered)."),
    "artifact.failed": EventSpec(ArtifactFailedPayload, "An output failed to render."),
    "followup.asked": EventSpec(FollowupAskedPayload, "A follow-up question about the report was asked."),
    "followup.activity": EventSpec(FollowupActivityPayload, "What the follow-up's answer is doing, by `kind`."),
    "followup.delta": EventSpec(FollowupDeltaPayload, "Batched text of the answer."),
    "followup.done": EventSpec(FollowupDonePayload, "The answer is ready."),
    "followup.failed": EventSpec(FollowupFailedPayload, "The answer failed."),
    "followup.requeued": EventSpec(FollowupRequeuedPayload, "Its worker was lost; the streamed text starts again."),
}


@cache
def _adapter(type_: str) -> TypeAdapter[Any]:
    return TypeAdapter(EVENTS[type_].payload)


def event_problem(type_: str, payload: dict[str, Any]) -> str:
    """Why this event is not as declared, or "" when it is."""
    if type_ not in EVENTS:
        return f"event type {type_!r} is not declared in research/jobs/event_types.py"
    try:
        _adapter(type_).validate_python(payload)
    except PydanticError as exc:
        return f"{type_} payload {sorted(payload)} does not match its declaration: {exc}"
    return ""


# --- the docs' table ---------------------------------------------------------------------------


def _keys(payload: Any) -> list[str]:
    """A TypedDict's keys as the table shows them: `a`, and `b`? for one that may be left out."""
    hints = get_type_hints(payload, include_extras=True)
    return [f"`{k}`?" if get_origin(hint) is NotRequired else f"`{k}`" for k, hint in hints.items()]


def _payload_text(payload: Any) -> str:
    if get_origin(payload) is Annotated:  # a union told apart by `kind`
        union = get_args(payload)[0]
        parts = []
        for member in get_args(union):
            kind = get_args(get_type_hints(member)["kind"])[0]
            own = [k for k in _keys(member) if k.strip("`?") not in ("kind", "step", "run")]
            parts.append(f"`{kind}`" + (f" ({', '.join(own)})" if own else ""))
        return "`step`?, `run`?, `kind`: " + "; ".join(parts)
    return ", ".join(_keys(payload)) or "–"


def event_table_markdown() -> str:
    """The table of docs/architecture.md, "Events", from the declarations."""
    rows = ["| Type | Payload | Meaning |", "|---|---|---|"]
    for type_, spec in EVENTS.items():
        rows.append(f"| `{type_}` | {_payload_text(spec.payload)} | {spec.meaning} |")
    return "\n".join(rows) + "\n"
