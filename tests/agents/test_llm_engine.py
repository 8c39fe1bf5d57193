"""The LLM engine against the real LLMClient and the fake vLLM server playing the research scenario."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from research.agents.engines import get_engine
from research.agents.engines.llm import EngineError, LLMEngine
from research.agents.graph import validate_plan
from research.agents.prompts import available_prompts, load_prompt, render
from research.agents.text import detect_locale
from research.agents.types import (
    CodeRun,
    JobCancelled,
    Plan,
    PlanStep,
    PodcastScript,
    SlideOutline,
    StepResult,
    ToolError,
)
from research.llm.client import LLMClient
from research.llm.types import CallRecord
from research.report.citations import citation_numbers
from tests.support.citecheck import check_citations
from tests.support.fake_context import FakeContext, FakePage
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.scenario import Scenario, agent_of
from tests.support.site import PAGES

QUESTION = "How fast are solar power costs falling?"
ZH_QUESTION = "中国光伏产业的发展现状如何？"
WEB = [FakePage(f"https://site.example{p.path}", p.title, p.text) for p in PAGES]


@pytest.fixture
def records() -> list[CallRecord]:
    return []


@pytest.fixture
def llm(fake: FakeLLM, records: list[CallRecord]) -> Iterator[LLMClient]:
    client = LLMClient(
        base_url=fake.base_url,
        model=fake.model,
        profile="qwen3",
        timeout=5.0,
        max_retries=2,
        backoff_base=0.01,
        backoff_max=0.02,
        on_call=records.append,
    )
    yield client
    client.close()


@pytest.fixture
def engine() -> LLMEngine:
    return LLMEngine()


def make_ctx(llm: LLMClient, question: str = QUESTION, **kwargs: Any) -> FakeContext:
    return FakeContext(question=question, pages=list(WEB), llm_client=llm, locale=detect_locale(question), **kwargs)


def requests_of(fake: FakeLLM, agent: str) -> list[dict[str, Any]]:
    return [r for r in fake.requests if agent_of(r) == agent]


def research_plan(engine: LLMEngine, ctx: FakeContext) -> Plan:
    return engine.plan(ctx, max_steps=5)


def first_step(plan: Plan) -> PlanStep:
    return next(s for s in plan.steps if s.step_type == "research")


# ---- engines and prompts ---------------------------------------------------------------


def test_get_engine_by_name():
    assert get_engine("llm").name == "llm"
    assert get_engine("offline").name == "offline"
    with pytest.raises(ValueError, match="unknown engine"):
        get_engine("gpt")


def test_every_prompt_has_both_languages_and_a_role_marker():
    names = available_prompts()
    assert {"coordinator", "planner", "researcher", "coder", "reporter", "podcast", "slides"} <= set(names)
    for name in names:
        en, zh = load_prompt(name, "en-US"), load_prompt(name, "zh-CN")
        assert en.splitlines()[0] == f"# Role: {name}" == zh.splitlines()[0]
        assert en != zh and detect_locale(zh) == "zh-CN"
    assert load_prompt("planner", "zh-TW") == load_prompt("planner", "zh-CN")
    assert load_prompt("planner", "de-DE") == load_prompt("planner", "en-US")


def test_prompt_substitution_leaves_json_braces_alone():
    template = 'Hello {name}. Reply {"id": "s1", "steps": []} or {unknown} or { }.'
    assert render(template, name="Ada") == 'Hello Ada. Reply {"id": "s1", "steps": []} or {unknown} or { }.'


# ---- coordinator -------------------------------------------------------------------------


def test_coordinator_answers_a_greeting_directly(engine, llm, records):
    decision = engine.coordinate(make_ctx(llm, "hello"))
    assert decision.action == "answer"
    assert "research question" in decision.answer
    assert records[-1].agent == "coordinator"


def test_coordinator_routes_questions_to_research_with_locale(engine, llm):
    assert engine.coordinate(make_ctx(llm, QUESTION)).action == "research"
    decision = engine.coordinate(make_ctx(llm, ZH_QUESTION))
    assert (decision.action, decision.locale) == ("research", "zh-CN")
    zh_greeting = engine.coordinate(make_ctx(llm, "你好"))
    assert zh_greeting.action == "answer" and detect_locale(zh_greeting.answer) == "zh-CN"


def test_coordinator_keeps_a_chosen_locale_and_treats_auto_as_unset(engine, llm):
    assert engine.coordinate(make_ctx(llm, ZH_QUESTION, options={"locale": "auto"})).locale == "zh-CN"
    assert engine.coordinate(make_ctx(llm, ZH_QUESTION, options={"locale": "en-GB"})).locale == "en-GB"


def test_coordinator_clarifies_only_when_allowed(engine, llm, fake):
    clarify = json.dumps({"action": "clarify", "locale": "de-DE", "answer": "Which country do you mean?"})
    fake.set_responder(lambda body: Reply(content=clarify))
    assert engine.coordinate(make_ctx(llm, "Wie teuer ist Strom?")).action == "research"
    decision = engine.coordinate(make_ctx(llm, "Wie teuer ist Strom?", options={"clarify": True}))
    assert (decision.action, decision.answer, decision.locale) == ("clarify", "Which country do you mean?", "de-DE")
    assert "## Clarification allowed\nyes" in requests_of(fake, "coordinator")[-1]["messages"][1]["content"]


def test_coordinator_strips_leaked_thinking(engine, llm, fake):
    fake.inject("think_leak_tags", 1)
    decision = engine.coordinate(make_ctx(llm, "hello"))
    assert decision.action == "answer" and "think" not in decision.answer.lower()


def test_coordinator_falls_back_to_research_when_output_is_unusable(engine, llm, fake):
    fake.inject("malformed_json", 3)
    decision = engine.coordinate(make_ctx(llm, ZH_QUESTION))
    assert (decision.action, decision.locale) == ("research", "zh-CN")


# ---- planner -----------------------------------------------------------------------------


def test_plan_is_valid_and_follows_the_question(engine, llm, records):
    plan = engine.plan(make_ctx(llm), max_steps=5)
    assert validate_plan(plan, max_steps=5) == []
    assert len(plan.steps) == 3 and plan.locale == "en-US"
    assert all("solar power costs" in s.title for s in plan.steps)
    assert plan.steps[2].step_type == "processing" and plan.steps[2].depends_on == ["s1", "s2"]
    assert records[-1].agent == "planner"


def test_plan_for_a_chinese_question_is_chinese_and_clamped(engine, llm):
    plan = engine.plan(make_ctx(llm, ZH_QUESTION), max_steps=2)
    assert plan.locale == "zh-CN" and len(plan.steps) == 2
    assert all(detect_locale(s.title) == "zh-CN" for s in plan.steps)


def test_plan_from_a_sloppy_model_is_repaired(engine, llm, fake):
    sloppy = {
        "locale": "fr-FR",
        "title": "Solar",
        "steps": [
            {"id": "a", "title": "One", "depends_on": ["c"]},
            {"id": "a", "title": "Two", "depends_on": ["a", "ghost"]},
            {"id": "c", "title": "Three", "depends_on": ["a"]},
            {"id": "d", "title": "Four"},
            {"id": "e", "title": "Five"},
        ],
    }
    # Fenced, with a trailing comma: the client's lenient parser repairs it.
    fake.set_responder(lambda body: Reply(content="```json\n" + json.dumps(sloppy)[:-1] + ",}\n```"))
    plan = engine.plan(make_ctx(llm), max_steps=4)
    assert validate_plan(plan, max_steps=4) == []
    assert [s.id for s in plan.steps] == ["a", "a-2", "c", "d"]
    assert plan.locale == "en-US"  # the job's locale wins over the model's guess


def test_empty_plan_becomes_one_research_step(engine, llm, fake):
    fake.set_responder(lambda body: Reply(content=json.dumps({"title": "Nothing", "steps": []})))
    plan = engine.plan(make_ctx(llm), max_steps=3)
    assert len(plan.steps) == 1 and plan.steps[0].title == QUESTION


def test_replan_sends_previous_plan_and_feedback_verbatim(engine, llm, fake):
    ctx = make_ctx(llm)
    first = engine.plan(ctx, max_steps=5)
    feedback = "Please focus on rooftop solar in Germany {not utility-scale}."
    second = engine.plan(ctx, max_steps=5, feedback=feedback, previous=first)
    request = requests_of(fake, "planner")[-1]["messages"][-1]["content"]
    assert feedback in request
    assert first.model_dump_json(indent=2) in request
    assert second != first and "rooftop solar in Germany" in second.steps[0].title
    assert validate_plan(second, max_steps=5) == []


def test_malformed_plan_json_is_retried(engine, llm, fake):
    fake.inject("malformed_json", 2)
    plan = engine.plan(make_ctx(llm), max_steps=5)
    assert len(plan.steps) == 3
    assert len(requests_of(fake, "planner")) == 3


def test_plan_fails_clearly_when_every_attempt_is_malformed(engine, llm, fake):
    fake.inject("malformed_json", 3)
    with pytest.raises(EngineError, match="planner could not produce a valid plan"):
        engine.plan(make_ctx(llm), max_steps=5)


# ---- researcher --------------------------------------------------------------------------


def test_research_step_fetches_registers_and_cites_only_its_sources(engine, llm, fake, records):
    ctx = make_ctx(llm)
    plan = research_plan(engine, ctx)
    result = engine.research(ctx, first_step(plan), plan, [])
    registered = {s.number for s in ctx.sources()}
    assert len(ctx.fetched) == 2 and result.notes["sources"] == sorted(registered)
    cited = set(citation_numbers(result.report_md))
    assert cited and cited <= registered
    assert check_citations(result.report_md, {s.number: s.text for s in ctx.sources()}) == []
    assert result.notes["stopped"] == "done" and result.notes["rounds"] == 3
    assert {r.agent for r in records} == {"planner", "researcher"}
    tool_messages = [m for m in requests_of(fake, "researcher")[-1]["messages"] if m["role"] == "tool"]
    assert any(m["content"].startswith("Source [1]: ") for m in tool_messages)


def test_research_step_removes_citations_it_cannot_back(engine, llm, fake, scenario):
    ctx = make_ctx(llm)
    plan = research_plan(engine, ctx)
    # A source registered by another step and not handed over as prior: not citable here.
    other = ctx._register("https://other.example/x", "Other", "Other text.", "web")
    prior = StepResult("s0", "Earlier", f"Earlier finding [{other.number}].")

    def bogus(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and not reply.tool_calls:
            reply.content += f"\n\nAlso [{other.number}], [77] and [{other.number}, 2, 88]. `x[77]` stays."
        return reply

    fake.set_responder(bogus)
    without_prior = engine.research(ctx, first_step(plan), plan, [])
    assert other.number == 1 and without_prior.notes["sources"] == [2, 3]
    assert "Also, and [2]. `x[77]` stays." in without_prior.report_md
    assert without_prior.notes["removed_citations"] == 4
    with_prior = engine.research(ctx, first_step(plan), plan, [prior])
    assert "Also [1], and [1][2]. `x[77]` stays." in with_prior.report_md


def test_unknown_tool_gets_an_error_message_and_the_loop_goes_on(engine, llm, fake):
    ctx = make_ctx(llm)
    plan = research_plan(engine, ctx)
    fake.inject("unknown_tool", 1)
    result = engine.research(ctx, first_step(plan), plan, [])
    second = requests_of(fake, "researcher")[1]["messages"]
    error = next(m for m in second if m["role"] == "tool")
    assert "unknown tool 'no_such_tool'" in error["content"] and "web_search" in error["content"]
    assert result.notes["tool_errors"] == 1 and len(ctx.fetched) == 2


def test_failing_fetch_is_reported_to_the_model(engine, llm, fake):
    class BrokenFetch(FakeContext):
        def fetch(self, url: str):
            raise ToolError(f"could not fetch {url}: HTTP 503")

    ctx = BrokenFetch(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan = research_plan(engine, ctx)
    result = engine.research(ctx, first_step(plan), plan, [])
    tool_texts = [m["content"] for m in requests_of(fake, "researcher")[-1]["messages"] if m["role"] == "tool"]
    assert any("HTTP 503" in t for t in tool_texts)
    assert result.notes["tool_errors"] == 2 and "No citable sources" in result.report_md


def test_endless_tool_calls_stop_at_the_round_cap(engine, llm, fake, scenario):
    ctx = make_ctx(llm, options={"max_rounds": 4})
    plan = research_plan(engine, ctx)

    def endless(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and body.get("tools") and not reply.tool_calls:
            return Reply(tool_calls=[{"name": "web_search", "arguments": {"query": "solar again"}}])
        return reply

    fake.set_responder(endless)
    result = engine.research(ctx, first_step(plan), plan, [])
    calls = requests_of(fake, "researcher")
    assert len(calls) == 5 and all(c.get("tools") for c in calls[:4]) and "tools" not in calls[4]
    assert result.notes["stopped"] == "rounds" and result.notes["rounds"] == 4
    assert set(citation_numbers(result.report_md)) <= set(result.notes["sources"]) and result.notes["sources"]
    assert any(
        e == ("step.activity", {"kind": "think", "text": "Budget reached (rounds); writing the step report."})
        for e in ctx.events
    )


def test_endless_tool_calls_with_nothing_gathered_fail_loudly(engine, llm, fake):
    ctx = make_ctx(llm, options={"max_rounds": 2})
    plan = research_plan(engine, ctx)
    fake.inject("endless_tool_calls", 10)
    with pytest.raises(EngineError, match="produced no report"):
        engine.research(ctx, first_step(plan), plan, [])


def test_token_budget_stops_the_loop_and_the_report_is_still_written(engine, llm, fake):
    ctx = make_ctx(llm, options={"step_token_budget": 50})
    plan = research_plan(engine, ctx)
    result = engine.research(ctx, first_step(plan), plan, [])
    assert result.notes["stopped"] == "tokens" and result.notes["rounds"] == 1
    assert result.report_md.strip()


def test_time_budget_stops_before_any_tool_round(engine, llm, fake):
    ctx = make_ctx(llm, options={"step_time_budget_s": 1e-9})
    plan = research_plan(engine, ctx)
    result = engine.research(ctx, first_step(plan), plan, [])
    assert result.notes["stopped"] == "time" and result.notes["rounds"] == 0
    assert "tools" not in requests_of(fake, "researcher")[-1] and result.report_md.strip()


def test_a_slow_server_makes_the_step_write_up_instead_of_starting_a_round(engine, llm, fake, monkeypatch):
    from research.llm.types import ServerSpeed

    ctx = make_ctx(llm, options={"step_time_budget_s": 600})
    plan = research_plan(engine, ctx)
    # Measured: 1 token/s. A round plus the write-up (2 x 400 tokens) cannot fit in 600 s.
    monkeypatch.setattr(llm, "speed", lambda: ServerSpeed(tokens_per_s=1.0, ttft_s=2.0, samples=3))
    result = engine.research(ctx, first_step(plan), plan, [])
    assert result.notes["stopped"] == "time" and result.notes["rounds"] == 0
    assert "tools" not in requests_of(fake, "researcher")[-1] and result.report_md.strip()
    # At a fast measured speed the same budget lets rounds run.
    monkeypatch.setattr(llm, "speed", lambda: ServerSpeed(tokens_per_s=500.0, ttft_s=0.1, samples=3))
    assert engine.research(ctx, first_step(plan), plan, []).notes["rounds"] >= 1


def test_cancellation_is_checked_between_rounds(engine, llm, fake):
    class CancelOnSearch(FakeContext):
        def search(self, query: str, *, max_results: int = 8):
            self.cancelled = True  # the user presses cancel while the search runs
            return super().search(query, max_results=max_results)

    ctx = CancelOnSearch(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan = research_plan(engine, ctx)
    with pytest.raises(JobCancelled):
        engine.research(ctx, first_step(plan), plan, [])
    assert len(requests_of(fake, "researcher")) == 1


def test_think_leak_is_stripped_from_the_step_report(engine, llm, fake):
    ctx = make_ctx(llm, options={"max_rounds": 0})
    plan = research_plan(engine, ctx)
    ctx.options["step_time_budget_s"] = 1e-9  # straight to the final call
    fake.inject("think_leak", 1)
    result = engine.research(ctx, first_step(plan), plan, [])
    assert "think" not in result.report_md.lower() and result.report_md.strip()


def test_knowledge_search_is_offered_only_with_a_knowledge_base(engine, llm, fake):
    kb = [FakePage("kb://doc/1", "Our solar notes", "Our team measured solar power costs at 4 cents per kWh in 2023.")]
    ctx = make_ctx(llm, kb_pages=kb, options={"kb": 7})
    plan = research_plan(engine, ctx)
    result = engine.research(ctx, first_step(plan), plan, [])
    tools = {t["function"]["name"] for t in requests_of(fake, "researcher")[0]["tools"]}
    assert tools == {"web_search", "fetch_page", "knowledge_search"}
    kb_number = ctx.registry["kb://doc/1"].number
    assert kb_number in result.notes["sources"] and f"[{kb_number}]" in result.report_md
    plain = make_ctx(llm)
    engine.research(plain, first_step(plan), plan, [])
    assert {t["function"]["name"] for t in requests_of(fake, "researcher")[-3]["tools"]} == {"web_search", "fetch_page"}


def test_analysis_step_without_search_writes_from_prior_results(engine, llm, fake):
    ctx = make_ctx(llm)
    plan = research_plan(engine, ctx)
    ref = ctx.fetch(WEB[0].url)
    finding = f"- Solar power has become the cheapest source of new electricity. [{ref.number}]"
    prior = [StepResult("s1", "Costs", finding)]
    step = PlanStep(id="s9", title="Compare", step_type="analysis", need_search=False)
    result = engine.research(ctx, step, plan, prior)
    assert "tools" not in requests_of(fake, "researcher")[-1]
    assert f"[{ref.number}]" in result.report_md and result.notes["rounds"] == 1


# ---- coder -------------------------------------------------------------------------------


class ChartContext(FakeContext):
    """Runs 'code': a program that indexes out of range fails, others save one chart."""

    def run_python(self, code: str) -> CodeRun:
        self.code_runs.append(code)
        if "values[10]" in code:
            return CodeRun("", "IndexError: list index out of range", 1, False)
        self.figure_names.append("s3-chart.png")
        return CodeRun("total = 29\nsaved chart.png\n", "", 0, False, figures=["s3-chart.png"])


def processing_step(plan: Plan) -> PlanStep:
    return next(s for s in plan.steps if s.step_type == "processing")


def test_coder_runs_code_and_embeds_its_figure(engine, llm, fake, records):
    ctx = ChartContext(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan = research_plan(engine, ctx)
    result = engine.process(ctx, processing_step(plan), plan, [])
    assert len(ctx.code_runs) == 1 and "savefig" in ctx.code_runs[0]
    assert result.figures == ["s3-chart.png"] and "](figures/s3-chart.png)" in result.report_md
    assert "29" in result.report_md and result.notes["succeeded"] is True
    assert records[-1].agent == "coder"


def test_coder_fixes_a_failing_program(engine, llm, fake):
    fake.set_responder(Scenario(code_failures=2))
    ctx = ChartContext(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan = research_plan(engine, ctx)
    result = engine.process(ctx, processing_step(plan), plan, [])
    assert len(ctx.code_runs) == 3 and result.notes["runs"] == 3 and result.notes["succeeded"] is True
    retry = requests_of(fake, "coder")[1]["messages"][-1]["content"]
    assert "IndexError" in retry and "Fix the code" in retry


def test_coder_gives_up_after_three_fixes(engine, llm, fake):
    fake.set_responder(Scenario(code_failures=10))
    ctx = ChartContext(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan = research_plan(engine, ctx)
    result = engine.process(ctx, processing_step(plan), plan, [])
    assert len(ctx.code_runs) == 4 and result.notes["succeeded"] is False and result.report_md.strip()


def test_coder_reports_a_refusing_sandbox_clearly(engine, llm, fake):
    class NoSandbox(FakeContext):
        def run_python(self, code: str) -> CodeRun:
            return CodeRun("", "", -1, False, error="The Python sandbox is unavailable: no user namespaces")

    ctx = NoSandbox(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan = research_plan(engine, ctx)
    result = engine.process(ctx, processing_step(plan), plan, [])
    assert "no user namespaces" in result.report_md and "```python" in result.report_md
    assert result.notes["sandbox_error"].startswith("The Python sandbox is unavailable")
    assert len(requests_of(fake, "coder")) == 1  # no summary call for a run that never happened


# ---- reporter ----------------------------------------------------------------------------


def run_job(engine: LLMEngine, ctx: FakeContext) -> tuple[Plan, list[StepResult]]:
    plan = engine.plan(ctx, max_steps=5)
    results: dict[str, StepResult] = {}
    for step in plan.steps:
        prior = [results[d] for d in step.depends_on]
        run = engine.process if step.step_type == "processing" else engine.research
        results[step.id] = run(ctx, step, plan, prior)
    return plan, list(results.values())


def test_report_streams_cites_and_embeds_figures(engine, llm, fake, records):
    ctx = ChartContext(question=QUESTION, pages=list(WEB), llm_client=llm)
    plan, results = run_job(engine, ctx)
    deltas: list[str] = []
    report = engine.report(ctx, plan, results, style="news", on_delta=deltas.append)
    assert report.startswith("# ") and len(deltas) > 3
    assert "".join(deltas).strip() == report.strip()
    assert "](figures/s3-chart.png)" in report
    sources = {s.number: s.text for s in ctx.sources()}
    problems = check_citations(report, sources)
    assert problems == ["line 19: [99] is not a registered source: 'Some claims remain unverified'"] or (
        len(problems) == 1 and "[99]" in problems[0]
    )
    request = requests_of(fake, "reporter")[0]
    assert request["stream"] is True and "## Style\nnews" in request["messages"][1]["content"]
    assert "[1] The Falling Cost of Solar Power — https://site.example/" in request["messages"][1]["content"]
    agents = [r.agent for r in records]
    assert set(agents) == {"planner", "researcher", "coder", "reporter"}


def test_report_follows_a_chinese_question(engine, llm):
    ctx = make_ctx(llm, ZH_QUESTION)
    plan, results = run_job(engine, ctx)
    report = engine.report(ctx, plan, results, style="popular_science", on_delta=lambda _: None)
    assert detect_locale(report) == "zh-CN" and report.startswith("# 研究报告")


def test_report_drops_a_references_section_and_gets_a_title(engine, llm, fake):
    ctx = make_ctx(llm)
    plan = Plan(title="Solar costs", steps=[PlanStep(id="s1", title="Costs")])
    text = "Solar is cheap [1].\n\n## Outlook\n\nCheaper still.\n\n## References\n\n1. [Fake](https://x.example)\n"
    fake.set_responder(lambda body: Reply(content=text))
    report = engine.report(
        ctx, plan, [StepResult("s1", "Costs", "Solar is cheap.")], style="academic", on_delta=lambda _: None
    )
    assert report.startswith("# Solar costs\n") and "## Outlook" in report
    assert "References" not in report and "x.example" not in report


def test_report_hides_leaked_thinking_from_stream_and_result(engine, llm, fake):
    ctx = make_ctx(llm)
    plan = Plan(title="Solar costs", steps=[PlanStep(id="s1", title="Costs")])
    fake.inject("think_leak_tags", 1)
    deltas: list[str] = []
    report = engine.report(
        ctx, plan, [StepResult("s1", "Costs", "Solar is cheap.")], style="social_media", on_delta=deltas.append
    )
    assert "think" not in report.lower() and "think" not in "".join(deltas).lower()


def test_empty_report_raises(engine, llm, fake):
    fake.set_responder(lambda body: Reply(content="   "))
    plan = Plan(title="Solar costs", steps=[PlanStep(id="s1", title="Costs")])
    with pytest.raises(EngineError, match="empty report"):
        engine.report(make_ctx(llm), plan, [], style="academic", on_delta=lambda _: None)


# ---- podcast and slides ------------------------------------------------------------------

REPORT = """# Solar power costs

## Summary

Solar power has become the cheapest source of new electricity in much of the world. [1]

## Chart

Costs fell by about 90 percent. [1]

![Cost per year](figures/s3-chart.png)

## Conclusion

Costs keep falling, more slowly.
"""


def test_podcast_script_and_slide_outline(engine, llm, records):
    ctx = make_ctx(llm, figure_names=["s3-chart.png"])
    script = engine.podcast_script(ctx, REPORT)
    assert isinstance(script, PodcastScript) and len(script.lines) >= 4 and script.locale == "en-US"
    assert {line.speaker for line in script.lines} == {"host", "guest"}
    outline = engine.slide_outline(ctx, REPORT)
    assert isinstance(outline, SlideOutline) and outline.title == "Solar power costs"
    assert [s.figure for s in outline.slides] == [None, "s3-chart.png", None]
    assert [r.agent for r in records] == ["podcast", "slides"]


def test_podcast_and_slides_fall_back_to_the_report(engine, llm, fake):
    ctx = make_ctx(llm)
    fake.inject("malformed_json", 6)
    script = engine.podcast_script(ctx, REPORT)
    outline = engine.slide_outline(ctx, REPORT)
    assert script.lines and outline.slides and outline.title == "Solar power costs"


def test_slide_figures_must_exist(engine, llm, fake):
    outline = {"title": "T", "slides": [{"title": "A", "bullets": ["x"], "figure": "figures/missing.png"}]}
    fake.set_responder(lambda body: Reply(content=json.dumps(outline)))
    assert engine.slide_outline(make_ctx(llm), REPORT).slides[0].figure is None


# ---- MCP tools ---------------------------------------------------------------------------


def test_mcp_tools_are_offered_and_called(engine, llm, fake, scenario, monkeypatch):
    from research.tools import mcp_client

    listed = [mcp_client.McpTool("files", "lookup", "Look a word up", {"type": "object", "properties": {}})]
    calls: list[tuple[str, str, dict[str, Any]]] = []

    def call_tool(server: str, tool: str, arguments: dict[str, Any]) -> str:
        calls.append((server, tool, arguments))
        if arguments.get("word") == "bad":
            raise mcp_client.McpError("MCP tool files/lookup failed: no such word")
        return "solar: energy from the sun"

    monkeypatch.setattr(mcp_client, "mcp_list_server_tools", lambda server: listed)
    monkeypatch.setattr(mcp_client, "mcp_call_tool", call_tool)

    def use_mcp(body: dict[str, Any]) -> Reply:
        if agent_of(body) == "researcher" and not any(m["role"] == "tool" for m in body["messages"]):
            return Reply(tool_calls=[{"name": "mcp_lookup", "arguments": {"word": w}} for w in ("solar", "bad")])
        return scenario(body)

    fake.set_responder(use_mcp)
    ctx = make_ctx(llm, options={"mcp_tools": ["files"]})
    plan = research_plan(engine, ctx)
    result = engine.research(ctx, first_step(plan), plan, [])
    first = requests_of(fake, "researcher")[0]
    assert "mcp_lookup" in {t["function"]["name"] for t in first["tools"]}
    assert calls == [("files", "lookup", {"word": "solar"}), ("files", "lookup", {"word": "bad"})]
    answers = [m["content"] for m in requests_of(fake, "researcher")[1]["messages"] if m["role"] == "tool"]
    assert answers[0] == "solar: energy from the sun" and "no such word" in answers[1]
    assert ("step.activity", {"kind": "tool", "name": "lookup", "server": "files"}) in ctx.events
    assert result.notes["tool_errors"] == 1
