"""The offline engine end to end over an in-memory context: no model, no network."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pytest

from research.agents.engines.offline import OfflineEngine, is_small_talk
from research.agents.types import (
    CodeRun,
    JobCancelled,
    Plan,
    PlanStep,
    SearchHit,
    SourceRef,
    StepResult,
    ToolError,
)
from tests.support.citecheck import check_citations
from tests.support.fake_context import FakeContext, FakePage

QUESTION = "What is the state of solid-state batteries for electric vehicles?"
ZH_QUESTION = "固态电池在电动汽车中的发展现状如何？"

NEWS = FakePage(
    "https://news.example.com/solid-state-batteries",
    "Solid-state batteries edge closer to electric vehicles",
    """Home
World
Technology

# Solid-state batteries edge closer to electric vehicles

We use cookies to improve your experience. Accept all cookies to continue.

Solid-state batteries replace the flammable liquid electrolyte of today's lithium-ion cells with a
solid material, which promises safer and lighter electric vehicles.[1] Toyota said it plans to
launch its first electric vehicle with solid-state batteries in 2027. Samsung SDI announced a
pilot production line for solid-state batteries in 2023.

The current state of the industry is a race between carmakers and start-ups. QuantumScape shipped
its first solid-state battery samples to carmakers for testing in 2022.

Subscribe to our newsletter for the latest technology news.
""",
)
DATA = FakePage(
    "https://energy.example.org/solid-state-outlook",
    "Solid-state battery market: key figures",
    """Solid-state battery market: key figures

Analysts estimate the solid-state battery market at 85 million dollars in 2023. The market for
solid-state batteries could reach 8 billion dollars by 2030, growing about 40 percent a year.
Solid-state batteries could store 50 percent more energy per kilogram than lithium-ion batteries.
Solid-state batteries replace the flammable liquid electrolyte of today's lithium-ion cells with a
solid material, which promises safer and lighter electric vehicles.

The outlook for solid-state batteries depends on whether manufacturing costs fall quickly enough.
Most forecasts expect solid-state batteries in premium electric vehicles first, before cheaper models.
""",
)
CHALLENGES = FakePage(
    "https://blog.example.net/solid-state-challenges",
    "Why solid-state batteries are hard",
    """Why solid-state batteries are hard

The main challenges for solid-state batteries are dendrites, interface resistance and cost.
Dendrites are needle-like lithium deposits that can grow through the solid electrolyte and cause
short circuits. Manufacturing thin ceramic separators at scale remains an obstacle for every
solid-state battery developer. Copyright 2024 Example Blog. All rights reserved.
""",
)
HISTORY = FakePage(
    "https://wiki.example.org/Solid-state_battery",
    "Solid-state battery - history",
    """Solid-state battery

The history of solid-state batteries goes back to the 1830s, when Michael Faraday discovered solid
electrolytes such as silver sulfide. In the 1990s, researchers at Oak Ridge National Laboratory
developed thin-film solid-state batteries for small electronic devices. The background of the
technology is therefore older than the lithium-ion battery itself.
""",
)
ZH_NEWS = FakePage(
    "https://news.example.cn/gutai-dianchi",
    "固态电池离电动汽车还有多远",
    """首页 | 科技 | 汽车

固态电池使用固态电解质代替液态电解液，被认为能显著提高电动汽车的安全性。
目前，多家车企和电池企业正在加快固态电池的研发和中试生产。
丰田表示计划在2027年推出搭载固态电池的电动汽车。
业内人士认为，固态电池的成本仍然远高于液态锂离子电池，这是量产的主要障碍。
版权所有 © 2024 某某科技网站
""",
)
ZH_DATA = FakePage(
    "https://data.example.cn/gutai-shuju",
    "固态电池关键数据",
    """固态电池关键数据

据机构统计，2023年全球固态电池市场规模约为6亿元人民币。
预计到2030年，固态电池的能量密度有望达到每公斤500瓦时。
固态电池的发展前景取决于制造成本能否快速下降。
""",
)
KB_DOC = FakePage(
    "kb://reports/ssb-internal.pdf",
    "Internal memo: solid-state batteries",
    """Internal memo on solid-state batteries.

Our evaluation found that solid-state batteries from two suppliers retained 90 percent of their
capacity after 800 charging cycles. The main obstacle for our electric vehicle programme is the
price of solid-state cells, which is still about four times that of lithium-ion cells.
""",
)
EN_PAGES = [NEWS, DATA, CHALLENGES, HISTORY]


def _ctx(**kwargs) -> FakeContext:
    kwargs.setdefault("question", QUESTION)
    kwargs.setdefault("pages", list(EN_PAGES))
    return FakeContext(**kwargs)


def _zh_ctx(**kwargs) -> FakeContext:
    return FakeContext(question=ZH_QUESTION, pages=[ZH_NEWS, ZH_DATA], locale="zh-CN", **kwargs)


@dataclass
class Job:
    plan: Plan
    results: list[StepResult]
    report: str
    deltas: list[str] = field(default_factory=list)


def _run_job(ctx: FakeContext, *, max_steps: int = 5, style: str = "academic") -> Job:
    engine = OfflineEngine()
    assert engine.coordinate(ctx).action == "research"
    plan = engine.plan(ctx, max_steps=max_steps)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    deltas: list[str] = []
    report = engine.report(ctx, plan, results, style=style, on_delta=deltas.append)
    return Job(plan, results, report, deltas)


def _sources(ctx: FakeContext) -> dict[int, str]:
    return {s.number: s.text for s in ctx.sources()}


def _cited(md: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d+)\]", md)}


# ---------------------------------------------------------------- coordinator


@pytest.mark.parametrize("text", ["hi", "Hello!", "hey there", "thanks a lot", "Thank you!", "good morning"])
def test_english_small_talk_is_answered(text):
    decision = OfflineEngine().coordinate(_ctx(question=text))
    assert decision.action == "answer"
    assert decision.locale == "en-US"
    assert "offline engine" in decision.answer and "research question" in decision.answer


@pytest.mark.parametrize("text", ["你好", "您好！", "谢谢", "你好呀"])
def test_chinese_small_talk_is_answered_in_chinese(text):
    decision = OfflineEngine().coordinate(_ctx(question=text))
    assert decision.action == "answer"
    assert decision.locale == "zh-CN"
    assert "离线引擎" in decision.answer


def test_questions_are_researched_with_their_locale():
    engine = OfflineEngine()
    assert engine.coordinate(_ctx()).action == "research"
    decision = engine.coordinate(_ctx(question=ZH_QUESTION))
    assert (decision.action, decision.locale) == ("research", "zh-CN")
    assert not is_small_talk("hello, how do solid-state batteries work?")
    assert not is_small_talk("你好，固态电池的原理是什么？")


# ---------------------------------------------------------------- planner


def test_plan_has_english_facets_as_independent_search_steps():
    plan = OfflineEngine().plan(_ctx(), max_steps=5)
    assert [s.title for s in plan.steps] == [
        "Background",
        "Current state",
        "Key figures and data",
        "Challenges and obstacles",
        "Outlook",
    ]
    assert [s.id for s in plan.steps] == [f"step-{i}" for i in range(1, 6)]
    assert all(s.step_type == "research" and s.need_search and s.depends_on == [] for s in plan.steps)
    assert all("solid-state" in s.description and "batteries" in s.description for s in plan.steps)
    assert "challenges" in plan.steps[3].description
    assert plan.title == QUESTION and plan.locale == "en-US" and plan.has_enough_context is False


def test_plan_has_chinese_facets_for_chinese_questions():
    plan = OfflineEngine().plan(_zh_ctx(), max_steps=5)
    assert plan.locale == "zh-CN"
    assert [s.title for s in plan.steps] == ["背景", "现状", "关键数据", "挑战与障碍", "前景"]
    assert all(s.description.startswith("固态电池") for s in plan.steps)
    assert "前景" in plan.steps[-1].description


def test_plan_is_clamped_to_max_steps():
    engine = OfflineEngine()
    assert [s.title for s in engine.plan(_ctx(), max_steps=3).steps] == [
        "Current state",
        "Key figures and data",
        "Challenges and obstacles",
    ]
    one = engine.plan(_ctx(), max_steps=1)
    assert [s.title for s in one.steps] == ["Overview"]
    assert len(engine.plan(_ctx(), max_steps=0).steps) == 1
    assert len(engine.plan(_ctx(), max_steps=7).steps) == 5  # five facets unless more are asked for
    assert engine.plan(_ctx(), max_steps=5) == engine.plan(_ctx(), max_steps=5)  # deterministic


def test_replan_feedback_changes_the_plan():
    engine = OfflineEngine()
    ctx = _ctx()
    first = engine.plan(ctx, max_steps=7)

    focused = engine.plan(ctx, max_steps=7, feedback="Focus more on Europe and recycling", previous=first)
    assert [s.title for s in focused.steps] == [s.title for s in first.steps]
    assert all("Europe" in s.description and "recycling" in s.description for s in focused.steps)
    assert "Europe" in focused.thought

    fewer = engine.plan(ctx, max_steps=7, feedback="fewer steps please, and no outlook", previous=first)
    assert len(fewer.steps) == 4
    assert "Outlook" not in [s.title for s in fewer.steps]

    only = engine.plan(ctx, max_steps=7, feedback="only challenges and key figures", previous=first)
    assert [s.title for s in only.steps] == ["Key figures and data", "Challenges and obstacles"]

    more = engine.plan(ctx, max_steps=7, feedback="add a section on key players", previous=first)
    assert "Key players" in [s.title for s in more.steps] and len(more.steps) == 6

    counted = engine.plan(ctx, max_steps=7, feedback="3 steps", previous=first)
    assert len(counted.steps) == 3


def test_replan_feedback_in_chinese():
    engine = OfflineEngine()
    ctx = _zh_ctx()
    first = engine.plan(ctx, max_steps=5)
    plan = engine.plan(ctx, max_steps=5, feedback="去掉背景，重点关注欧洲市场", previous=first)
    assert "背景" not in [s.title for s in plan.steps]
    assert all("欧洲市场" in s.description for s in plan.steps)


# ---------------------------------------------------------------- researcher


def test_research_cites_only_fetched_pages_with_verbatim_sentences():
    ctx = _ctx()
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    for step in plan.steps:
        result = engine.research(ctx, step, plan, [])
        lines = result.report_md.strip().splitlines()
        assert 1 <= len(lines) <= engine.sentences_per_step
        assert all(re.fullmatch(r"- .+ \[\d+\]", line) for line in lines)
        assert check_citations(result.report_md, _sources(ctx)) == []
        fetched_numbers = {ctx.registry[url].number for url in ctx.fetched}
        assert _cited(result.report_md) <= fetched_numbers
        assert result.notes["sentences"][0]["score"] > 0
    # Boilerplate never makes it into a step report.
    assert not any("cookie" in s["text"].lower() for s in result.notes["sentences"])


def test_a_step_quotes_up_to_nine_sentences_and_three_of_one_page():
    # Five a step left most of what a page on the subject states unquoted (issue 32: most facts missed on dev
    # were in a ranked but unshown sentence of a page already cited); nine, three a page at most, lets three
    # pages speak.
    ctx = _ctx()
    engine = OfflineEngine()
    assert (engine.sentences_per_step, engine.per_source) == (9, 3)
    plan = engine.plan(ctx, max_steps=5)
    reports = [engine.research(ctx, step, plan, []).report_md for step in plan.steps]
    shown = [re.findall(r"\[(\d+)\]$", report, re.M) for report in reports]
    assert max(len(numbers) for numbers in shown) == 9
    full = [numbers for numbers in shown if len(numbers) == 9]
    assert all(max(Counter(numbers).values()) <= 3 for numbers in full)


def test_research_ranks_sentences_for_the_step_facet():
    ctx = _ctx()
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    by_title = {s.title: engine.research(ctx, s, plan, []) for s in plan.steps}
    top = {title: " ".join(s["text"] for s in r.notes["sentences"][:2]) for title, r in by_title.items()}
    assert "history" in top["Background"] and "background" in top["Background"]
    assert "current state" in top["Current state"]
    assert "85 million" in top["Key figures and data"] and "40 percent" in top["Key figures and data"]
    assert "challenges" in top["Challenges and obstacles"] and "obstacle" in top["Challenges and obstacles"]
    assert "forecasts" in top["Outlook"] and "outlook" in top["Outlook"]


def test_research_in_chinese_cites_verbatim_sentences():
    ctx = _zh_ctx()
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    result = engine.research(ctx, plan.steps[1], plan, [])
    assert "固态电池" in result.report_md
    assert re.search(r"。\[\d+\]", result.report_md)
    assert check_citations(result.report_md, _sources(ctx)) == []


def test_near_duplicate_sentences_are_dropped():
    # NEWS and DATA both carry the same sentence about the solid electrolyte (syndicated text).
    ctx = _ctx()
    engine = OfflineEngine()
    step = PlanStep(id="step-1", title="Solid electrolyte", description="solid electrolyte flammable liquid")
    plan = Plan(title=QUESTION, steps=[step])
    result = engine.research(ctx, step, plan, [])
    assert result.report_md.count("flammable liquid electrolyte") == 1


def test_fetch_failures_are_reported_and_skipped():
    class FlakyContext(FakeContext):
        def fetch(self, url: str) -> SourceRef:
            if url == NEWS.url:
                self.emit("step.activity", {"kind": "fetch", "url": url})
                raise ToolError("HTTP 503")
            return super().fetch(url)

    extra = FakePage(
        "https://gov.example.org/ev-batteries",
        "Electric vehicle batteries",
        "Battery electric vehicles made up 18 percent of new car sales in 2023, a new high.\n",
    )
    ctx = FlakyContext(question=QUESTION, pages=[*EN_PAGES, extra])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    result = engine.research(ctx, plan.steps[1], plan, [])
    assert NEWS.url not in ctx.registry
    assert ("step.activity", {"kind": "fetch_failed", "url": NEWS.url, "error": "HTTP 503"}) in ctx.events
    assert len(ctx.fetched) == 4  # the next hit was read instead
    assert result.notes["errors"] == [f"{NEWS.url}: HTTP 503"]
    assert check_citations(result.report_md, _sources(ctx)) == []


def test_knowledge_base_only_job_makes_no_web_calls():
    ctx = FakeContext(question=QUESTION, pages=list(EN_PAGES), kb_pages=[KB_DOC], options={"web": False, "kb": True})
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=2)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    assert ctx.fetched == []
    assert not [e for e in ctx.events if e[0] == "step.activity" and e[1]["kind"] in {"search", "fetch"}]
    assert any(e[1]["kind"] == "kb" for e in ctx.events if e[0] == "step.activity")
    assert all(_cited(r.report_md) == {ctx.registry[KB_DOC.url].number} for r in results)
    assert all(check_citations(r.report_md, _sources(ctx)) == [] for r in results)


def test_web_and_knowledge_base_together():
    ctx = _ctx(kb_pages=[KB_DOC], options={"kb": True})
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    result = engine.research(ctx, plan.steps[3], plan, [])  # challenges and obstacles
    kinds = {ctx.registry[url].kind for url in ctx.registry}
    assert kinds == {"web", "kb"}
    assert check_citations(result.report_md, _sources(ctx)) == []


def test_step_without_search_rereads_found_sources():
    ctx = _ctx()
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    engine.research(ctx, plan.steps[0], plan, [])
    searches = len([e for e in ctx.events if e[1].get("kind") == "search"])
    step = PlanStep(id="step-9", title="Challenges", description="challenges obstacles", need_search=False)
    result = engine.research(ctx, step, plan, [])
    assert len([e for e in ctx.events if e[1].get("kind") == "search"]) == searches
    assert "challenges" in result.report_md
    assert check_citations(result.report_md, _sources(ctx)) == []


def test_knowledge_hits_mixed_into_search_are_not_fetched():
    class MixedSearch(FakeContext):
        def search(self, query: str, *, max_results: int = 8) -> list[SearchHit]:
            kb_hit = SearchHit(KB_DOC.title, KB_DOC.url, "", "knowledge")
            return [kb_hit, *super().search(query, max_results=max_results)]

    ctx = MixedSearch(question=QUESTION, pages=list(EN_PAGES))
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    result = engine.research(ctx, plan.steps[0], plan, [])
    assert KB_DOC.url not in ctx.registry and result.notes["errors"] == []


def test_nothing_found_raises_tool_error():
    ctx = FakeContext(question=QUESTION, pages=[])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=2)
    with pytest.raises(ToolError, match="no sources found for step"):
        engine.research(ctx, plan.steps[0], plan, [])


def test_cancellation_is_honoured_between_fetches():
    class CancelAfterFirstFetch(FakeContext):
        def fetch(self, url: str) -> SourceRef:
            ref = super().fetch(url)
            self.cancelled = True  # the user presses cancel while the first page loads
            return ref

    ctx = CancelAfterFirstFetch(question=QUESTION, pages=list(EN_PAGES))
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    with pytest.raises(JobCancelled):
        engine.research(ctx, plan.steps[0], plan, [])
    assert len(ctx.fetched) == 1


# ---------------------------------------------------------------- processing step


def _prior_with_numbers() -> list[StepResult]:
    sentences = [
        {"text": "The market could reach 8 billion dollars by 2030, growing about 40 percent a year.", "source": 1},
        {"text": "Cells retained 90 percent of their capacity after 800 charging cycles.", "source": 2},
    ]
    return [StepResult("step-1", "Key figures", "- …", notes={"sentences": sentences})]


def test_process_step_computes_statistics_in_the_sandbox():
    ctx = _ctx()
    step = PlanStep(id="step-2", title="Analyse figures", step_type="processing", depends_on=["step-1"])
    plan = Plan(title=QUESTION, steps=[step])
    result = OfflineEngine().process(ctx, step, plan, _prior_with_numbers())
    assert len(ctx.code_runs) == 1
    assert "[8.0, 40.0, 90.0, 800.0]" in ctx.code_runs[0]  # the year 2030 is not data
    assert "42" in result.report_md  # the sandbox's stdout is reported
    assert not re.search(r"\[\d+\]", result.report_md)  # no citation on text that isn't a quote


def test_process_step_reports_a_refusing_sandbox():
    class NoSandbox(FakeContext):
        def run_python(self, code: str) -> CodeRun:
            return CodeRun("", "", -1, False, error="isolation not available")

    ctx = NoSandbox(question=QUESTION)
    step = PlanStep(id="step-2", title="Analyse figures", step_type="processing")
    result = OfflineEngine().process(ctx, step, Plan(title=QUESTION, steps=[step]), _prior_with_numbers())
    assert "refused" in result.report_md and "isolation not available" in result.report_md


def test_process_step_without_numbers_runs_nothing():
    ctx = _ctx()
    step = PlanStep(id="step-2", title="Analyse", step_type="processing")
    result = OfflineEngine().process(ctx, step, Plan(title=QUESTION, steps=[step]), [])
    assert ctx.code_runs == [] and "nothing to compute" in result.report_md


# ---------------------------------------------------------------- reporter


def test_report_opens_with_an_answer_then_key_findings_then_non_empty_sections_and_no_references():
    ctx = _ctx()
    job = _run_job(ctx)
    md = job.report
    assert md.startswith(f"# {QUESTION}\n")
    assert "offline engine" in md.splitlines()[2] and md.splitlines()[2].startswith("_")
    headings = re.findall(r"^## (.+)$", md, re.M)
    step_titles = [s.title for s in job.plan.steps]
    # An answer in prose first, then key findings, then the steps in plan order, those with nothing
    # left to show dropped.
    assert headings[:2] == ["Answer", "Key findings"] and headings[2:] == [t for t in step_titles if t in headings[2:]]
    answer = md.split("## Answer\n\n")[1].split("\n## ")[0]
    assert not re.search(r"^- ", answer, re.M) and len(re.findall(r"\[\d+\]", answer)) >= 2
    # A quote a paragraph: lines in one block would render as one run-on paragraph.
    assert all("\n" not in block for block in answer.strip().split("\n\n"))
    assert not re.search(r"^#+\s*(references|sources)", md, re.I | re.M)
    assert "".join(job.deltas) == md and len(job.deltas) == len(headings) + 1
    findings = md.split("## Key findings")[1].split("\n## ")[0]
    lines = [line for line in findings.strip().splitlines() if line]
    assert 2 <= len(lines) <= 6 and all(re.fullmatch(r"- .+ \[\d+\]", line) for line in lines)
    for heading in headings[2:]:  # no filler: every section shows cited sentences
        body = md.split(f"## {heading}\n")[1].split("\n## ")[0]
        assert re.search(r"^- .+\[\d+\]$", body, re.M), heading
    assert "already appear" not in md
    assert check_citations(md, _sources(ctx)) == []
    fetched_numbers = {ctx.registry[url].number for url in ctx.fetched}
    assert _cited(md) <= fetched_numbers
    # Nothing is said twice, Key findings included.
    bullets = re.findall(r"^- (.+) \[\d+\]$", md, re.M)
    assert len(bullets) == len(set(bullets))


def test_key_findings_lead_with_what_the_question_asks():
    ctx = FakeContext(question="What are the main challenges for solid-state batteries?", pages=_ctx().pages)
    job = _run_job(ctx)
    # The answer opens the report, with what the question asks about.
    answer = job.report.split("## Answer")[1].split("\n## ")[0]
    first = answer.strip().split("[")[0].lower()
    assert "challenge" in first or "obstacle" in first or "dendrite" in first


def test_chinese_report():
    ctx = _zh_ctx()
    job = _run_job(ctx, max_steps=3)
    headings = re.findall(r"^## (.+)$", job.report, re.M)
    assert headings[:2] == ["答案", "主要发现"] and set(headings[2:]) <= {s.title for s in job.plan.steps}
    assert "离线引擎" in job.report
    assert check_citations(job.report, _sources(ctx)) == []


def test_chinese_report_over_english_sources_says_so_once_and_keeps_quotes_clean():
    # English pages a search finds for a Chinese question (their titles carry the Chinese subject).
    pages = [FakePage(p.url, f"固态电池 {p.title}", p.text) for p in _ctx().pages]
    ctx = FakeContext(question="固态电池面临哪些挑战？", pages=pages, locale="zh-CN")
    job = _run_job(ctx, max_steps=3)
    md = job.report
    assert md.count("引文保留原文") == 1
    assert check_citations(md, _sources(ctx)) == []
    # One quote per bullet, spaced before its marker, never glued to the next one ("conductor. [1]Lithium").
    assert not re.search(r"\][ \t]*[A-Za-z\u4e00-\u9fff]", md.split("## ", 1)[1])
    assert re.search(r"^- [A-Z].+[.!?] \[\d+\]$", md, re.M)


def test_report_uses_processing_step_text_and_style():
    ctx = _ctx()
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=2)
    results = [engine.research(ctx, s, plan, []) for s in plan.steps]
    analysis = PlanStep(id="step-3", title="Analysis", step_type="processing", depends_on=["step-1", "step-2"])
    plan.steps.append(analysis)
    results.append(engine.process(ctx, analysis, plan, results))
    md = engine.report(ctx, plan, results, style="social_media", on_delta=lambda _: None)
    assert "## Analysis" in md and "descriptive statistics" in md
    findings = md.split("## Key findings")[1].split("\n## ")[0]
    assert 1 <= len(re.findall(r"\[\d+\]", findings)) <= 3
    assert check_citations(md, _sources(ctx)) == []


# ---------------------------------------------------------------- derived outputs


def test_podcast_script_and_slide_outline_derive_from_the_report():
    ctx = _ctx()
    job = _run_job(ctx, max_steps=3)
    engine = OfflineEngine()
    script = engine.podcast_script(ctx, job.report)
    outline = engine.slide_outline(ctx, job.report)
    assert script.lines and script.locale == "en-US"
    assert outline.slides
    titles = " ".join(s.title for s in outline.slides)
    assert "Answer" in titles and "Key findings" in titles


# ---------------------------------------------------------------- the citation checker


def test_citecheck_accepts_verbatim_and_flags_everything_else():
    sources = {
        1: "Solid-state batteries use a solid\nelectrolyte. Dr. Smith of the U.S. Army said so in 2023.",
        2: "固态电池使用固态电解质。丰田计划在2027年推出相关车型。",
    }
    good = (
        "# Title\n\n_Offline note._\n\n## Summary\n\n"
        "Solid-state batteries use a solid electrolyte. [1] Dr. Smith of the U.S. Army said so in 2023 [1].\n"
        "- 固态电池使用固态电解质。[2]丰田计划在2027年推出相关车型。[1][2]\n"
        "- Solid-state batteries use a solid electrolyte. [1, 2]\n\n"
        "```\nnot checked [9]\n```\n\n## References\n\n- [1] [A page](https://example.com/a)\n- [2] Another\n"
    )
    assert check_citations(good, sources) == []

    bad = (
        "Solid-state batteries are cheap and widely sold. [1]\n"
        "Solid-state batteries use a solid electrolyte. [7]\n"
        "丰田计划在2030年推出相关车型。[2]\n"
    )
    problems = check_citations(bad, sources)
    assert len(problems) == 3
    assert "line 1: sentence not found in source [1]" in problems[0]
    assert "[7] is not a registered source" in problems[1]
    assert "line 3" in problems[2] and "2030" in problems[2]


# ---------------------------------------------------------------- the shared test site's articles


@pytest.mark.parametrize(
    ("question", "locale"),
    [("How cheap has solar power become and what limits it?", "en-US"), ("中国新能源汽车的发展现状如何？", "zh-CN")],
)
def test_whole_job_over_the_test_site_articles(question, locale):
    from tests.support import site

    pages = [FakePage(f"https://site.test{p.path}", p.title, p.text) for p in site.PAGES if p.kind == "html"]
    ctx = FakeContext(question=question, pages=pages, locale=locale)
    job = _run_job(ctx)
    assert check_citations(job.report, _sources(ctx)) == []
    assert _cited(job.report) <= {ctx.registry[url].number for url in ctx.fetched}
    assert len(_cited(job.report)) >= 2
