"""The offline engine's processing step: descriptive statistics, run in the sandbox, of the numbers
quoted by earlier steps (docs/offline-engine.md)."""

from __future__ import annotations

import json
from typing import Any

from research.agents.engines.offline.numbers import _numbers
from research.agents.engines.offline.write import _notes_sentences
from research.agents.text import is_chinese
from research.agents.types import AgentContext, Plan, PlanStep, StepResult
from research.report.citations import strip_citations

_STATS_CODE = """\
import statistics
values = {values}
print("count", len(values))
print("min", min(values))
print("max", max(values))
print("mean", round(statistics.mean(values), 4))
print("median", statistics.median(values))
if len(values) > 1:
    print("stdev", round(statistics.stdev(values), 4))
"""


def process_step(
    ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *, engine: str
) -> StepResult:
    """OfflineEngine.process: the statistics of the numbers the earlier steps quoted."""
    zh = is_chinese(ctx.locale or plan.locale)
    sentences: list[str] = []
    for result in prior:
        quoted = [s["text"] for s in _notes_sentences(result)]
        # Without ranked sentences (another engine's result), read its text minus the [n] markers.
        sentences += quoted or [strip_citations(result.report_md)]
    values = _numbers(sentences)
    notes: dict[str, Any] = {"engine": engine, "values": values}
    if not values:
        text = (
            "前序步骤的来源句子中没有找到数值，因此没有可计算的内容。"
            if zh
            else "The sentences gathered by earlier steps contain no numbers, so there was nothing to compute."
        )
        return StepResult(step.id, step.title, text + "\n", notes=notes)

    ctx.check_cancelled()
    run = ctx.run_python(_STATS_CODE.format(values=json.dumps(values)))
    notes.update({"exit_code": run.exit_code, "timed_out": run.timed_out, "error": run.error})
    if zh:
        intro = f"离线引擎对前序步骤来源句子中出现的 {len(values)} 个数值做了简单的描述性统计（不含年份）。"
    else:
        intro = (
            f"The offline engine computed simple descriptive statistics of the {len(values)} numbers "
            "quoted in the earlier steps' source sentences (years left out)."
        )
    if run.error:
        outcome = f"沙箱拒绝运行代码：{run.error}" if zh else f"The sandbox refused to run the code: {run.error}"
        text = f"{intro}\n\n{outcome}\n"
    elif run.timed_out or run.exit_code != 0:
        detail = "timed out" if run.timed_out else f"exit code {run.exit_code}"
        outcome = f"代码运行失败（{detail}）。" if zh else f"The code run failed ({detail})."
        text = f"{intro}\n\n{outcome}\n"
    else:
        text = f"{intro}\n\n```\n{run.stdout.strip()}\n```\n"
    return StepResult(step.id, step.title, text, figures=list(run.figures), notes=notes)
