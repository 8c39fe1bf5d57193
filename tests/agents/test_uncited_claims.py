"""Uncited claims: a report keeps no factual sentence that no source supports.

The model stand-in of `make eval` (bench/eval/server.py's EvalScenario) invents a study, with an
invented citation and link, and cites a true finding to a source that does not exist. Through the
real report path (the llm engine's reporter, finalize_report, report_check with the model as judge),
the invented study goes entirely and the true finding is cited to the source that states it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.eval.server import EvalScenario
from research.agents.engines.llm import LLMEngine
from research.agents.text import detect_locale
from research.agents.types import SourceRef
from research.llm.client import LLMClient
from research.report.check import is_factual, model_judge, report_check, uncited_factual_sentences
from research.report.citations import finalize_report
from tests.support.fake_context import FakeContext, FakePage
from tests.support.fake_llm import FakeLLM
from tests.support.site import PAGES

WEB = [FakePage(f"https://site.example{p.path}", p.title, p.text) for p in PAGES]
QUESTION = "How fast are solar power costs falling?"


@pytest.fixture
def llm() -> Iterator[LLMClient]:
    with FakeLLM(EvalScenario()) as fake:
        client = LLMClient(base_url=fake.base_url, model=fake.model, profile="qwen3", timeout=5.0, max_retries=1,
                           backoff_base=0.01, backoff_max=0.02)
        yield client
        client.close()


def _report(llm: LLMClient) -> tuple[str, list[SourceRef]]:
    engine = LLMEngine()
    ctx = FakeContext(question=QUESTION, pages=list(WEB), llm_client=llm, locale=detect_locale(QUESTION))
    plan = engine.plan(ctx, max_steps=4)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps if step.step_type == "research"]
    body = engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
    return body, ctx.sources()


def test_an_invented_study_leaves_neither_its_link_nor_its_claim(llm):
    body, sources = _report(llm)
    assert "2031 field trial" in body and "journals.example.org" in body and "[98]" in body  # the stand-in's lies
    moved = next(line for line in body.splitlines() if line.endswith("[98]"))[2:-5]
    final = finalize_report(body, sources, locale="en-US", mark_dropped=True)
    checked = report_check(final.markdown, sources, locale="en-US", judge=model_judge(llm, "en-US"))
    report = checked.markdown
    assert "2031" not in report and "1,200 km" not in report and "journals.example.org" not in report
    assert "trials.example.org" not in report and "unknown.example.net" not in report
    assert "\x02" not in report and "[97]" not in report
    # The true finding lost its invented [98] and is cited again, to the source that states it.
    line = next(line for line in report.splitlines() if moved in line)
    assert line.rstrip().endswith("]") and "(unverified)" not in line
    assert checked.uncited_removed >= 1 and checked.citations_added >= 1
    assert uncited_factual_sentences(report) == []


def test_uncited_factual_sentences_are_cited_removed_or_marked():
    source = SourceRef(4, "https://a.example/ssb", "SSB",
                       "Pilot lines make well under 1 gigawatt-hour of cells a year. Cells are made in dry rooms.")
    md = (
        "# R\n\n## Answer\n\nPilot lines make well under 1 gigawatt-hour of cells a year.\n\n"
        "Toyota's 2031 study found 9 gigawatt-hours of demand.\n\n"
        "Solid electrolytes are widely seen as promising.\n\n_An italic note about 3 things._\n"
    )
    generated = report_check(md, [source])
    assert "Pilot lines make well under 1 gigawatt-hour of cells a year. [1]" in generated.markdown
    assert "Toyota" not in generated.markdown  # no source says it
    assert "widely seen as promising." in generated.markdown  # states no fact: left alone
    assert "_An italic note about 3 things._" in generated.markdown  # notes are not claims
    assert generated.summary()["citations_added"] == 1 and generated.summary()["uncited_removed"] == 1
    edited = report_check(md, [source], remove_sure=False)  # a user's edit: marked, never cut
    assert "Toyota's 2031 study found 9 gigawatt-hours of demand. *(unverified)*" in edited.markdown
    # What a processing step computed stands without a citation.
    computed = report_check(md, [source], evidence=["Toyota's 2031 study found 9 gigawatt-hours of demand."])
    assert "Toyota" in computed.markdown
    # A Chinese claim over English sources cannot be scored: marked, not removed, without a judge.
    zh = report_check("# R\n\n这项试验显示续航大幅提高。\n", [source], locale="zh-CN")
    assert "（未经核实）" in zh.markdown


@pytest.mark.parametrize(
    "sentence, factual",
    [
        ("Costs fell 40 percent.", True),
        ("A 2019 survey of installers said so.", True),
        ("It is cheaper than gas.", True),
        ("According to the agency, demand grew.", True),
        ("In March the plant opened.", True),
        ("钠离子电池的能量密度低于磷酸铁锂电池。", True),
        ("This section sums up the findings.", False),
        ("固态电池被认为很有前途。", False),
    ],
)
def test_what_counts_as_a_factual_claim(sentence, factual):
    assert is_factual(sentence) is factual


def test_an_invented_figure_goes_whatever_the_script():
    # An English invented study in a Chinese report over Chinese sources: its figures are in no
    # source, so it goes even though the lexical test cannot compare the scripts.
    zh = SourceRef(1, "https://zh.example/pv", "光伏", "2023年中国光伏组件产量约为499吉瓦，占全球产量的80%以上。")
    md = f"# 报告\n\nA 2031 field trial reported 1,200 km of range.\n\n{zh.text}\n"
    checked = report_check(md, [zh], locale="zh-CN")
    assert "2031" not in checked.markdown and checked.uncited_removed == 1
    assert "499吉瓦，占全球产量的80%以上。[1]" in checked.markdown  # found: cited
    # Without figures, the judge's "no" removes an uncited claim in another script; "cannot tell" marks it.
    claim = "# 报告\n\nA field trial showed that every maker halved its factory costs.\n"
    assert "field trial" not in report_check(claim, [zh], locale="zh-CN", judge=lambda c, p: False).markdown
    assert "（未经核实）" in report_check(claim, [zh], locale="zh-CN", judge=lambda c, p: None).markdown
