"""Heavy mode's agent side: depth rules, run variants, synthesis rules, offline heavy runs and both engines'
synthesis (the LLM engine against the real LLMClient and the fake vLLM server)."""

from __future__ import annotations

import pytest

from research.agents.depth import (
    ANCHOR_EN,
    ANCHOR_ZH,
    ANCHORED_ENGINES,
    DEFAULT_RUNS,
    MAX_RUNS,
    DepthError,
    depth_clean,
    run_variants,
    step_runs,
)
from research.agents.engines.llm import LLMEngine
from research.agents.engines.offline import OfflineEngine
from research.agents.engines.offline.heavy import heavy_shown, lead_query, variant_queries
from research.agents.synthesis import drop_uncited, finding_check
from research.agents.text import detect_locale
from research.agents.types import Plan, PlanStep, SourceRef, StepResult
from research.llm.client import LLMClient
from research.report.citations import citation_numbers
from tests.support.fake_context import FakeContext, FakePage
from tests.support.fake_llm import Reply
from tests.support.scenario import Scenario, agent_of
from tests.support.site import PAGES

QUESTION = "How fast are solar power costs falling?"
WEB = [FakePage(f"https://site.example{p.path}", p.title, p.text) for p in PAGES]
STEP = PlanStep(id="s1", title="Key figures and data", description="solar power cost figures per watt")
PLAN = Plan(title="Solar", steps=[STEP])


# --- depth options and variants ------------------------------------------------------------------------

@pytest.mark.parametrize(("depth", "runs", "expected"), [
    (None, None, ("standard", 1)), ("standard", 4, ("standard", 1)), ("heavy", None, ("heavy", DEFAULT_RUNS)),
    ("heavy", "", ("heavy", DEFAULT_RUNS)), ("HEAVY", 2, ("heavy", 2)), ("heavy", "5", ("heavy", 5)),
    ("heavy", 1, ("heavy", 1)),
])
def test_depth_clean_accepts(depth, runs, expected):
    assert depth_clean(depth, runs) == expected


@pytest.mark.parametrize(("depth", "runs", "code"), [
    ("deep", None, "depth"), ("heavy", 0, "runs_range"), ("heavy", MAX_RUNS + 1, "runs_range"),
    ("heavy", "x", "runs_type"), ("heavy", 2.5, "runs_type"), ("heavy", True, "runs_type"),
])
def test_depth_clean_refuses_with_a_reason(depth, runs, code):
    with pytest.raises(DepthError) as info:
        depth_clean(depth, runs)
    assert info.value.code == code and str(info.value)


def test_only_research_and_analysis_steps_of_heavy_jobs_get_runs():
    heavy = {"depth": "heavy", "runs": 4}
    assert step_runs(heavy, "research") == 4 and step_runs(heavy, "analysis") == 4
    assert step_runs(heavy, "processing") == 0
    assert step_runs({"depth": "standard", "runs": 4}, "research") == 0
    assert step_runs({}, "research") == 0


def test_runs_are_steered_apart_and_stable():
    variants = run_variants(STEP, job_id=7, k=MAX_RUNS, locale="en-US")
    assert [v.index for v in variants] == list(range(MAX_RUNS)) and {v.count for v in variants} == {MAX_RUNS}
    assert len({v.seed for v in variants}) == MAX_RUNS
    assert len({v.emphasis for v in variants}) == MAX_RUNS
    assert len({v.opening_query for v in variants}) == MAX_RUNS
    assert all(v.opening_query.startswith(STEP.description) for v in variants)
    assert variants == run_variants(STEP, job_id=7, k=MAX_RUNS, locale="en-US")  # a redone run is the same run
    zh = run_variants(STEP, job_id=7, k=2, locale="zh-CN")
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in v.emphasis) for v in zh)


def test_an_anchored_engines_run_0_is_labelled_the_standard_step():
    plain = run_variants(STEP, job_id=7, k=3, locale="en-US")
    anchored = run_variants(STEP, job_id=7, k=3, locale="en-US", anchor=True)
    assert anchored[0].emphasis == ANCHOR_EN and anchored[0].opening_query == STEP.description
    assert anchored[1:] == plain[1:]  # the other runs are steered as before
    assert run_variants(STEP, job_id=7, k=2, locale="zh-CN", anchor=True)[0].emphasis == ANCHOR_ZH
    assert "offline" in ANCHORED_ENGINES and "llm" not in ANCHORED_ENGINES


# --- synthesis rules --------------------------------------------------------------------------------------

SOURCES = [SourceRef(1, "https://a.example/", "A", "Solar module prices fell by 90 percent since 2010."),
           SourceRef(2, "https://b.example/", "B", "Utility solar costs about 4 cents per kilowatt hour now."),
           SourceRef(3, "https://c.example/", "C", "Wind power is cheap too.")]


def test_drop_uncited_keeps_headings_and_cited_sentences_only():
    text, dropped = drop_uncited("## Costs\n\n- Prices fell [1]. This is great.\n- Nothing cited here.\n")
    assert text == "## Costs\n\n- Prices fell [1].\n" and dropped == 2


def test_finding_check_filters_citations_checks_claims_and_keeps_global_numbers():
    merged = ("Solar module prices fell by 90 percent since 2010 [1][9]. "
              "Utility solar costs about 4 cents per kilowatt hour now [2]. Everyone agrees.\n\n"
              "## References\n\n1. https://elsewhere.example/\n")
    checked = finding_check(merged, SOURCES, allowed={1, 2}, locale="en-US")
    assert "[9]" not in checked.markdown and "References" not in checked.markdown
    assert "Everyone agrees" not in checked.markdown and checked.dropped_claims == 1
    # Global numbers survive the check's renumbering: [2] stays [2] even though it is the 2nd cited.
    assert citation_numbers(checked.markdown) == [1, 2]
    assert checked.removed_citations == 1 and checked.check["claims"] == 2


def test_finding_check_on_numbers_other_than_1_keeps_them():
    checked = finding_check("Utility solar costs about 4 cents per kilowatt hour now [2].", SOURCES,
                            allowed={2}, locale="en-US")
    assert citation_numbers(checked.markdown) == [2]


# --- offline engine ----------------------------------------------------------------------------------------

def offline_ctx() -> FakeContext:
    return FakeContext(question=QUESTION, pages=list(WEB), locale="en-US")


def test_offline_heavy_runs_search_more_variants_and_differ():
    engine = OfflineEngine()
    ctx = offline_ctx()
    variants = run_variants(STEP, job_id=1, k=3, locale="en-US")
    results = [engine.research(ctx, STEP, PLAN, [], variant=v) for v in variants]
    searches = [e[1]["query"] for e in ctx.events if e[0] == "step.activity" and e[1].get("kind") == "search"]
    assert len(searches) >= 2 * len(variants) - 1  # more query variants per run than a standard step's one
    assert {tuple(variant_queries(STEP, v, "en-US")) for v in variants}.__len__() == 3
    for result in results:
        assert result.notes["sentences"] and citation_numbers(result.report_md)
        assert set(citation_numbers(result.report_md)) <= {s.number for s in ctx.sources()}
    standard = engine.research(offline_ctx(), STEP, PLAN, [])
    assert "run" not in standard.notes  # no variant: the standard path, unchanged


def test_offline_synthesis_merges_the_union_and_cites_agreeing_runs_together():
    engine = OfflineEngine()
    ctx = offline_ctx()
    runs = [engine.research(ctx, STEP, PLAN, [], variant=v) for v in run_variants(STEP, job_id=1, k=2, locale="en-US")]
    # A sentence run 1 found in a source the registry does not know is dropped.
    runs[1].notes["sentences"].append({"text": "An invented claim with no source at all.", "source": 999, "score": 9})
    merged = engine.synthesize(ctx, STEP, PLAN, runs)
    registered = {s.number for s in ctx.sources()}
    assert citation_numbers(merged.report_md) and set(citation_numbers(merged.report_md)) <= registered
    assert "invented claim" not in merged.report_md
    assert merged.notes["synthesis"] and merged.notes["runs"] == 2 and merged.notes["check"]["claims"] > 0
    # Every merged sentence is quoted from a page one of the runs read, and keeps its rank score.
    read = {n for r in runs for n in r.notes["sources"]}
    texts = {s.number: s.text for s in ctx.sources()}
    assert all(s["source"] in read and s["text"] in texts[s["source"]] for s in merged.notes["sentences"])
    assert all(float(s["score"]) > 0 for s in merged.notes["sentences"])
    backed = [s for s in merged.notes["sentences"] if len(s["runs"]) > 1]
    assert merged.notes["agreed"] == sum(1 for s in backed if s["text"] in merged.report_md)


def test_a_run_follows_a_lead_its_best_sentences_repeat():
    step = PlanStep(id="s1", title="Key figures", description="heat pump efficiency figures")
    ctx = FakeContext(question="How efficient are heat pumps in cold climates?")
    found = ["Cold-climate heat pumps keep a coefficient of performance near 2 at minus 20 degrees.",
             "The coefficient of performance drops as the outdoor air gets colder.",
             "Heat pumps are popular."]
    lead = lead_query(ctx, step, "en-US", found)
    assert lead.startswith("Key figures") and "coefficient" in lead
    assert not {"heat", "pumps", "cold"} & set(lead.lower().split()[2:])  # the question's words are no lead
    assert lead_query(ctx, step, "en-US", ["Heat pumps work.", "Cold climates are cold."]) == ""
    zh_step = PlanStep(id="s", title="挑战", description="挑战")
    zh = lead_query(FakeContext(question="抽水蓄能在中国面临哪些挑战？"), zh_step,
                    "zh-CN", ["抽水蓄能电站建设周期长。", "电站建设需要合适的地形。"])
    assert zh.startswith("挑战") and "电站" in zh and "抽水" not in zh


def test_a_run_searches_its_lead_and_reads_what_the_first_searches_missed():
    engine = OfflineEngine()
    ctx = offline_ctx()
    variant = run_variants(STEP, job_id=1, k=3, locale="en-US")[1]
    result = engine.research(ctx, STEP, PLAN, [], variant=variant)
    searches = [e[1]["query"] for e in ctx.events if e[0] == "step.activity" and e[1].get("kind") == "search"]
    assert len(result.notes["queries"]) == 3 and searches[-1].startswith(result.notes["queries"][-1])
    assert result.notes["queries"][-1].startswith(STEP.title)


def test_run_0_is_the_standard_step_and_the_finding_keeps_all_it_shows():
    engine = OfflineEngine()
    standard = engine.research(offline_ctx(), STEP, PLAN, [])
    ctx = offline_ctx()
    runs = [engine.research(ctx, STEP, PLAN, [], variant=v) for v in run_variants(STEP, job_id=1, k=3, locale="en-US")]
    assert runs[0].notes["anchor"] and runs[0].report_md == standard.report_md
    assert not runs[1].notes.get("anchor") and runs[1].report_md != standard.report_md
    merged = engine.synthesize(ctx, STEP, PLAN, runs)
    texts = [s["text"] for s in merged.notes["sentences"][: merged.notes["shown"]]]
    first = engine.sentences_per_step
    assert [s["text"] for s in standard.notes["sentences"][:first]] == texts[:first]


def test_a_synthesized_finding_shows_more_than_a_standard_step_and_the_report_keeps_them():
    engine = OfflineEngine()
    assert heavy_shown(engine, 1) == engine.sentences_per_step
    assert heavy_shown(engine, 3) == engine.sentences_per_step + 2
    assert heavy_shown(engine, 99) == 2 * engine.sentences_per_step
    ctx = offline_ctx()
    runs = [engine.research(ctx, STEP, PLAN, [], variant=v) for v in run_variants(STEP, job_id=1, k=3, locale="en-US")]
    merged = engine.synthesize(ctx, STEP, PLAN, runs)
    bullets = [line for line in merged.report_md.splitlines() if line.startswith("- ")]
    assert merged.notes["shown"] == heavy_shown(engine, 3)
    assert engine.sentences_per_step < len(bullets) <= merged.notes["shown"]
    report = engine.report(ctx, PLAN, [merged], style="academic", on_delta=lambda _: None)
    quoted = [s["text"] for s in merged.notes["sentences"][: merged.notes["shown"]]]
    assert sum(text in report for text in quoted) > engine.sentences_per_step


# --- LLM engine --------------------------------------------------------------------------------------------

@pytest.fixture
def scenario() -> Scenario:
    return Scenario(bogus_citation=False)


def llm_ctx(llm: LLMClient) -> FakeContext:
    return FakeContext(question=QUESTION, pages=list(WEB), llm_client=llm, locale=detect_locale(QUESTION))


def test_llm_synthesis_merges_runs_with_one_call_and_keeps_only_registered_citations(llm, fake, scenario):
    engine = LLMEngine()
    ctx = llm_ctx(llm)
    runs = [engine.research(ctx, STEP, PLAN, [], variant=v) for v in run_variants(STEP, job_id=1, k=2, locale="en-US")]
    before = len(scenario.calls)
    merged = engine.synthesize(ctx, STEP, PLAN, runs)
    assert scenario.calls[before:] == ["synthesis"]
    registered = {s.number for s in ctx.sources()}
    assert citation_numbers(merged.report_md) and set(citation_numbers(merged.report_md)) <= registered
    assert merged.notes["merged"] is True and merged.notes["runs"] == 2
    request = next(r for r in fake.requests if agent_of(r) == "synthesis")
    user = request["messages"][1]["content"]
    assert "### Report 1" in user and "### Report 2" in user and "## Sources (cite only these numbers)" in user


def test_llm_synthesis_drops_invented_sources_and_uncited_claims(llm, fake):
    fake.responder = lambda body: (Reply(content="Prices fell 90 percent [1][77]. A claim with no source.")
                                   if agent_of(body) == "synthesis" else Scenario(bogus_citation=False)(body))
    ctx = llm_ctx(llm)
    ctx.fetch(WEB[0].url)
    runs = [StepResult("s1", "t", f"- From run {i} [1].\n", notes={"sources": [1]}) for i in range(2)]
    merged = LLMEngine().synthesize(ctx, STEP, PLAN, runs)
    assert citation_numbers(merged.report_md) == [1]
    assert "no source" not in merged.report_md and merged.notes["dropped_claims"] == 1


def test_llm_synthesis_of_one_run_makes_no_model_call(llm, scenario):
    ctx = llm_ctx(llm)
    ref = ctx.fetch(WEB[0].url)
    first_sentence = ref.text.split(". ")[0].strip().rstrip(".")
    runs = [StepResult("s1", "t", f"{first_sentence} [{ref.number}].\n", notes={"sources": [ref.number]})]
    before = len(scenario.calls)
    merged = LLMEngine().synthesize(ctx, STEP, PLAN, runs)
    assert scenario.calls[before:] == [] and merged.notes["merged"] is False
    assert citation_numbers(merged.report_md) == [ref.number]
