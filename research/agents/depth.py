"""Depth: `standard` (one run per research step) or `heavy` (k parallel runs per step, then a synthesis).

Pure rules the jobs app, the forms, the API and the engines share (docs/agents.md, "Depth: standard and
heavy"): which depths exist, how many runs a step gets, and how the k runs of a step are steered apart
(each its own seed, source-type emphasis and opening query).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Literal

from research.agents.text import is_chinese
from research.agents.types import PlanStep, RunVariant

Depth = Literal["standard", "heavy"]
DEPTHS: tuple[str, ...] = ("standard", "heavy")
DEFAULT_RUNS = 3
MAX_RUNS = 5


@dataclass(frozen=True)
class Emphasis:
    """A kind of source a run leans towards: shown to the model, and its words steer the opening query."""

    text_en: str
    text_zh: str
    query_en: str
    query_zh: str


# One per run, in order: k ≤ MAX_RUNS runs of a step never share an emphasis.
EMPHASES: tuple[Emphasis, ...] = (
    Emphasis("official and primary sources: statistics, government and company reports",
             "官方和一手来源：统计数据、政府和企业报告", "official report statistics", "官方 报告 统计"),
    Emphasis("news and recent developments", "新闻和最新进展", "latest news developments", "最新 新闻 进展"),
    Emphasis("academic and technical analysis: studies, papers, expert reviews",
             "学术和技术分析：研究、论文、专家评述", "study research analysis", "研究 论文 分析"),
    Emphasis("industry and market sources: companies, analysts, trade press",
             "行业和市场来源：企业、分析师、行业媒体", "industry market companies", "行业 市场 企业"),
    Emphasis("critical and opposing views: risks, criticism, debates",
             "批评和反对意见：风险、争议、辩论", "criticism risks debate", "争议 风险 批评"),
)
assert len(EMPHASES) >= MAX_RUNS


class DepthError(ValueError):
    """Depth options that cannot be used; the message says why in words, `code` which rule failed
    (`depth`, `runs_type`, `runs_range`) so that the web app can say it in the user's language."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def depth_clean(depth: Any, runs: Any) -> tuple[str, int]:
    """(depth, runs) checked: depth `standard` or `heavy`, runs a whole number 1..MAX_RUNS (default 3).

    A standard job keeps runs = 1 whatever was sent, so `runs` only ever means "runs per heavy step".
    """
    depth = str(depth or "standard").strip().lower()
    if depth not in DEPTHS:
        raise DepthError(f"Unknown depth {depth!r}; choose standard or heavy.", "depth")
    if depth == "standard":
        return depth, 1
    if runs in (None, ""):
        return depth, DEFAULT_RUNS
    if isinstance(runs, bool):
        raise DepthError("Runs must be a whole number.", "runs_type")
    try:
        count = int(runs)
    except (TypeError, ValueError):
        raise DepthError("Runs must be a whole number.", "runs_type") from None
    if isinstance(runs, float) and runs != count:
        raise DepthError("Runs must be a whole number.", "runs_type")
    if not 1 <= count <= MAX_RUNS:
        raise DepthError(f"Runs must be between 1 and {MAX_RUNS}.", "runs_range")
    return depth, count


def step_runs(options: dict[str, Any], step_type: str) -> int:
    """How many parallel runs a step of this type gets: k for research/analysis steps of a heavy job,
    else 0 (the step runs once, as in standard depth). Processing steps run code once."""
    if options.get("depth") != "heavy" or step_type == "processing":
        return 0
    try:
        return max(1, min(MAX_RUNS, int(options.get("runs") or DEFAULT_RUNS)))
    except (TypeError, ValueError):
        return DEFAULT_RUNS


def run_seed(job_id: int, step_id: str, index: int) -> int:
    """A stable seed per run (the same run redone after a lost worker gets the same seed)."""
    return zlib.crc32(f"{job_id}:{step_id}:{index}".encode()) & 0x7FFFFFFF


def opening_query(step: PlanStep, emphasis: Emphasis, *, locale: str) -> str:
    """The run's first search: the step's own words plus its emphasis' words."""
    base = " ".join((step.description.strip() or step.title.strip()).split())
    words = emphasis.query_zh if is_chinese(locale) else emphasis.query_en
    return f"{base[:360]} {words}".strip()


# Run 0 of an engine in ANCHORED_ENGINES is the standard step itself (the offline engine's heavy mode keeps
# its finding and adds the other runs'): the job page labels it so instead of with an emphasis.
ANCHORED_ENGINES: tuple[str, ...] = ("offline",)
ANCHOR_EN = "the standard step, no emphasis (the other runs add to what it finds)"
ANCHOR_ZH = "标准步骤，不侧重某类来源（其他检索在其发现上补充）"


def run_variants(step: PlanStep, *, job_id: int, k: int, locale: str, anchor: bool = False) -> list[RunVariant]:
    """The k runs of a step, steered apart: each its own seed, emphasis and opening query. With `anchor`,
    run 0 is the standard step: no emphasis, the step's own words as its query."""
    k = max(1, min(MAX_RUNS, k))
    zh = is_chinese(locale)
    out: list[RunVariant] = []
    for index in range(k):
        emphasis = EMPHASES[index]
        if anchor and index == 0:
            label = ANCHOR_ZH if zh else ANCHOR_EN
            query = " ".join((step.description.strip() or step.title.strip()).split())[:400]
        else:
            label = emphasis.text_zh if zh else emphasis.text_en
            query = opening_query(step, emphasis, locale=locale)
        out.append(RunVariant(index=index, count=k, seed=run_seed(job_id, step.id, index), emphasis=label,
                              opening_query=query))
    return out


def variant_from_dict(data: dict[str, Any]) -> RunVariant:
    """A RunVariant stored as JSON (StepRun.variant) back as the dataclass."""
    return RunVariant(index=int(data.get("index", 0)), count=int(data.get("count", 1)),
                      seed=int(data.get("seed", 0)), emphasis=str(data.get("emphasis", "")),
                      opening_query=str(data.get("opening_query", "")))
