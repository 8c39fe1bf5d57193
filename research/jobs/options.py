"""Job options, typed: what the user chose, checked by one validator, apart from the stages' working data.

`ResearchJob.options` is one JSON object holding two kinds of keys (its stored shape is unchanged):

- the user's options (`JobOptions`): chosen on the new-job form, the API, the CLI or the MCP tool and
  checked by `job_options_clean`, the one validator every entry point goes through;
- the stages' working data (`StageData`): what the coordinator, the planner and the plan review leave
  for the next stage (clarifying questions and answers, background text, re-plan feedback). Only
  `options_with_stage` adds these keys.

`JobOptionsBase` is the shape the entry points share: the API's request body (`research.api.schemas
.JobCreateIn`) and the MCP tool's options (`research.api.mcp_server.ResearchOptions`) are subclasses, so
pydantic refuses the same values there (422 / a tool error) as `job_options_clean` refuses for the web
form and the CLI. Values are JSON's types as the schema states them: `"3"` or `true` is not a number.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict, get_args

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool
from pydantic import ValidationError as PydanticError
from typing_extensions import Unpack

from research.agents.depth import DEFAULT_RUNS, MAX_RUNS
from research.agents.types import STYLES
from research.render.formats import OutputKind, output_kinds, rendered_kinds

MAX_ID = 2**63 - 1  # ids are 64-bit integers in the database

EngineName = Literal["auto", "llm", "offline"]
DepthName = Literal["standard", "heavy"]
StyleName = Literal["academic", "popular_science", "news", "social_media"]
ENGINES: tuple[str, ...] = get_args(EngineName)
assert get_args(StyleName) == STYLES
LOCALE_PATTERN = "^(auto|[a-z]{2,3}(-[A-Za-z]{2,4})?)$"


def _json_int(value: Any) -> Any:
    """JSON's integers: 3 and 3.0 (the same number to JSON Schema), never true or "3"."""
    if isinstance(value, bool | str):
        raise ValueError("Input should be an integer")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Strict JSON types: pydantic's lax mode would take 0 for false and "5" for 5, which the schema does not allow.
Bool = StrictBool
# The range first: pydantic then states it as minimum/maximum in the JSON schema.
IdInt = Annotated[int, Field(ge=1, le=MAX_ID), BeforeValidator(_json_int)]
StepsInt = Annotated[int, Field(ge=1, le=settings.JOB_MAX_STEPS), BeforeValidator(_json_int)]
RunsInt = Annotated[int, Field(ge=1, le=MAX_RUNS), BeforeValidator(_json_int)]
CountInt = Annotated[int, Field(ge=0, le=10_000), BeforeValidator(_json_int)]


class JobOptionsBase(BaseModel):
    """The options every entry point takes (the API's body and the MCP tool's options extend it)."""

    style: StyleName = "academic"
    locale: str = Field(default="auto", pattern=LOCALE_PATTERN,
                        description="Report language: auto (same as the question), en-US, zh-CN, …")
    max_steps: StepsInt | None = Field(default=None,
                                       description="Most plan steps (default from the server settings).")
    outputs: list[OutputKind] = Field(default=["md"])  # the registered formats (research/render/formats/)
    auto_accept: Bool = Field(default=False, description="Run the plan without review.")
    engine: EngineName | None = None
    kb: IdInt | None = Field(default=None, description="Id of one of your knowledge bases to search "
                                               "(required when web is false; another's: 404).")
    web: Bool = Field(default=True, description="Search the web.")
    background: Bool = Field(default=False, description="Quick background search before planning.")
    direct_answer: Bool = Field(default=True,
                                description="false: never end with a short direct answer; always research.")
    depth: DepthName = Field(default="standard", description="heavy: several parallel runs per research step, "
                                                             "merged by a synthesis pass (slower, costlier).")
    runs: RunsInt | None = Field(default=None, description="Parallel runs per research step in heavy mode "
                                                           f"(1-{MAX_RUNS}, default {DEFAULT_RUNS}).")


class JobOptionsIn(JobOptionsBase):
    """What `job_options_clean` validates: the shared options plus those only some callers set."""

    model_config = ConfigDict(extra="ignore")

    clarify: Bool | None = None  # None: on unless the engine is offline
    step_concurrency: CountInt = 0  # 0 = no per-job limit; benchmarks use 1


class JobOptions(TypedDict):
    """The user's options as stored in `ResearchJob.options`, normalised."""

    style: str
    outputs: list[str]  # "md" first, then the others in the registry's order
    max_steps: int
    engine: str
    locale: str
    auto_accept: bool
    kb: int | None
    web: bool
    background: bool
    clarify: bool  # the coordinator may ask clarifying questions first
    direct_answer: bool  # False: the coordinator must not end the job with a direct answer
    step_concurrency: int
    depth: str
    runs: int  # 1 for a standard job


class StageData(TypedDict, total=False):
    """The stages' working data, stored beside the user's options in `ResearchJob.options`."""

    clarify_questions: list[str]  # the coordinator's questions, while the job awaits clarification
    clarifications: list[dict[str, str]]  # [{question, answer}] from the user
    clarify_skipped: bool  # the user skipped the questions
    background_text: str  # the background investigation's findings, for the planner
    replan_feedback: str  # the user's re-plan request, until the planner has used it
    replan_base: int  # the plan version the feedback is about


USER_OPTION_KEYS = frozenset(JobOptions.__annotations__)
STAGE_DATA_KEYS = frozenset(StageData.__annotations__)
assert not USER_OPTION_KEYS & STAGE_DATA_KEYS


def _message(error: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    """One pydantic error in the words (and language) the web form and the CLI have always shown."""
    field = str(error["loc"][0]) if error.get("loc") else ""
    kind = str(error.get("type", ""))
    value = raw.get(field)
    whole = kind in ("int_type", "int_parsing", "int_from_float", "value_error")
    if field == "style":
        return _("Unknown report style %(style)r; choose one of %(choices)s.") % {
            "style": value, "choices": ", ".join(STYLES)}
    if field == "outputs":
        bad = [str(o) for o in value] if isinstance(value, list) else [str(value)]
        bad = [o for o in bad if o not in output_kinds()] or bad
        return _("Unknown output(s) %(bad)s; choose from %(choices)s.") % {
            "bad": ", ".join(bad), "choices": ", ".join(output_kinds())}
    if field == "max_steps":
        if whole:
            return _("Max steps must be a whole number.")
        return _("Max steps must be between 1 and %(max)d.") % {"max": settings.JOB_MAX_STEPS}
    if field == "engine":
        return _("Unknown engine %(engine)r; choose llm, offline or auto.") % {"engine": value}
    if field == "locale":
        return _("Locale %(locale)r is not like en-US or zh-CN.") % {"locale": value}
    if field == "depth":
        return _("Unknown depth; choose standard or heavy.")
    if field == "runs":
        if whole:
            return _("Runs must be a whole number.")
        return _("Runs must be between 1 and %(max)d.") % {"max": MAX_RUNS}
    if field == "kb":
        return _("The knowledge base must be given by its id (a whole number).")
    if kind == "bool_type":
        return _("%(field)s must be true or false.") % {"field": field}
    return f"{field}: {error.get('msg', 'invalid')}"


def job_options_clean(options: Mapping[str, Any]) -> JobOptions:
    """The one validator of a job's options (web form, API, CLI, MCP): normalised, or ValidationError.

    Values must have their JSON types (a number, not "3"; true/false, not 1/0). The one spelling kept for
    callers from Python and the command line: `outputs` as a comma-separated string ("pdf,pptx").
    """
    data = {k: v for k, v in options.items() if v is not None and v != ""}  # absent or blank: the default
    if isinstance(data.get("outputs"), str):
        data["outputs"] = [o.strip() for o in str(data["outputs"]).split(",") if o.strip()]
    try:
        parsed = JobOptionsIn.model_validate(data)
    except PydanticError as exc:
        messages = list(dict.fromkeys(_message(e, data) for e in exc.errors()))
        raise ValidationError(messages) from None
    max_steps = parsed.max_steps or settings.JOB_DEFAULT_STEPS
    if max_steps > settings.JOB_MAX_STEPS:  # the field's bound is the setting at import; a test may lower it
        raise ValidationError(_("Max steps must be between 1 and %(max)d.") % {"max": settings.JOB_MAX_STEPS})
    engine = parsed.engine or settings.DEFAULT_ENGINE
    if engine not in ENGINES:  # a bad DEFAULT_ENGINE setting
        raise ValidationError(_("Unknown engine %(engine)r; choose llm, offline or auto.") % {"engine": engine})
    heavy = parsed.depth == "heavy"
    return {
        "style": parsed.style,
        "outputs": ["md"] + [o for o in rendered_kinds() if o in parsed.outputs],
        "max_steps": max_steps,
        "engine": engine,
        "locale": parsed.locale,
        "auto_accept": parsed.auto_accept,
        "kb": parsed.kb,
        "web": parsed.web,
        "background": parsed.background,
        # Clarifying questions: on by default where a model may ask them (the offline engine never does).
        "clarify": parsed.clarify if parsed.clarify is not None else engine != "offline",
        "direct_answer": parsed.direct_answer,
        "step_concurrency": parsed.step_concurrency,
        # Heavy mode: `runs` parallel runs per research/analysis step (docs/agents.md); a standard job has 1.
        "depth": parsed.depth,
        "runs": (parsed.runs or DEFAULT_RUNS) if heavy else 1,
    }


def depth_options_clean(*, depth: Any, runs: Any) -> tuple[str, int]:
    """A depth change (the plan review's choice), checked by the same validator as a new job's."""
    clean = job_options_clean({"depth": depth, "runs": runs})
    return clean["depth"], clean["runs"]


def options_with_stage(options: Mapping[str, Any], **data: Unpack[StageData]) -> dict[str, Any]:
    """The job's options with stage working data set (the only way stages add keys to `job.options`)."""
    unknown = set(data) - STAGE_DATA_KEYS
    if unknown:  # a typo would otherwise be stored and never read
        raise KeyError(f"not stage data: {sorted(unknown)}")
    return {**options, **data}


def options_without_stage(options: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The job's options with the named stage data removed (e.g. re-plan feedback once used)."""
    unknown = set(keys) - STAGE_DATA_KEYS
    if unknown:
        raise KeyError(f"not stage data: {sorted(unknown)}")
    return {k: v for k, v in options.items() if k not in keys}


def job_user_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The user's options of a stored `job.options` (the stage working data left out)."""
    return {k: v for k, v in options.items() if k not in STAGE_DATA_KEYS}


def job_stage_data(options: Mapping[str, Any]) -> StageData:
    """The stage working data of a stored `job.options`."""
    return StageData(**{k: v for k, v in options.items() if k in STAGE_DATA_KEYS})  # type: ignore[typeddict-item]
