"""A question in one script whose subject is covered only by pages in another (a Chinese question, English
pages): the step ranks those pages' sentences, not a page in the question's script that shares a word or two
with it and happens to be the search engine's first hit."""

from __future__ import annotations

import pytest

from research.agents.engines.offline import OfflineEngine
from research.agents.types import Plan, PlanStep
from tests.support.fake_context import FakeContext, FakePage

# The Chinese distractor repeats the question's generic words (量产, 电池) so that the search ranks it first;
# the English pages carry the subject's Chinese name only in their title, as a search index's keywords would.
DISTRACTOR = FakePage("https://zh.example/sodium", "钠离子电池量产计划",
                      "多家电池企业公布了钠离子电池量产计划。钠离子电池量产规模预计快速扩大。电池企业的量产限制主要是订单不足。")
ENGLISH = [
    FakePage("https://en.example/make", "固态电池 Why solid-state batteries are hard to make at scale",
             "Solid-state batteries are hard to make at scale. Sulfide electrolytes need dry rooms below minus 40 "
             "degrees Celsius. The separator must be thinner than 30 micrometres without pinholes. Many designs "
             "need a stack pressure of several megapascals. Solid-state cells cost two to four times as much."),
    FakePage("https://en.example/pilot", "固态电池 Solid-state battery pilot lines",
             "Solid-state battery pilot lines produce well under 1 gigawatt-hour a year. Oxide ceramics are brittle "
             "and need sintering above 1,000 degrees. Lithium dendrites can still short a solid-state cell."),
]


@pytest.mark.parametrize("question, title, description", [
    ("固态电池量产面临哪些限制？", "挑战与障碍", "固态电池量产面临的挑战、障碍和风险"),
    ("固态电池量产面临哪些限制？", "背景", "固态电池量产的背景和历史"),
])
def test_pages_in_another_script_beat_an_off_subject_page_in_the_questions_script(question, title, description):
    ctx = FakeContext(question=question, pages=[DISTRACTOR, *ENGLISH], locale="zh-CN")
    assert ctx.search(description)[0].url == DISTRACTOR.url  # the premise: the search puts the distractor first
    step = PlanStep(id="s1", title=title, description=description)
    result = OfflineEngine().research(ctx, step, Plan(title="t", locale="zh-CN", steps=[step]), [])
    numbers = {s.url: s.number for s in ctx.sources()}
    shown = result.notes["sentences"][:5]
    assert shown and numbers[DISTRACTOR.url] not in {s["source"] for s in shown}
    assert {s["source"] for s in shown} <= {numbers[p.url] for p in ENGLISH}


def test_a_page_in_the_questions_script_on_its_subject_still_comes_first():
    on_subject = FakePage("https://zh.example/ssb", "固态电池量产难在哪里",
                          "固态电池量产面临干燥房成本高的限制。固态电池量产还需要很高的堆叠压力。")
    ctx = FakeContext(question="固态电池量产面临哪些限制？", pages=[DISTRACTOR, on_subject, *ENGLISH], locale="zh-CN")
    step = PlanStep(id="s1", title="挑战与障碍", description="固态电池量产面临的挑战、障碍和风险")
    result = OfflineEngine().research(ctx, step, Plan(title="t", locale="zh-CN", steps=[step]), [])
    numbers = {s.url: s.number for s in ctx.sources()}
    assert result.notes["sentences"][0]["source"] == numbers[on_subject.url]


def test_the_same_holds_the_other_way_round_for_an_english_question_over_chinese_pages():
    distractor = FakePage("https://en.example/roads", "Speed limits and road challenges",
                          "Speed limits depend on the road. Road safety challenges vary by season.")
    chinese = [
        FakePage("https://zh.example/ph1", "pumped hydro 抽水蓄能面临的挑战",
                 "抽水蓄能电站建设周期长，一般需要六到八年。抽水蓄能电站需要合适的地形，站址资源有限。"),
        FakePage("https://zh.example/ph2", "pumped hydro 抽水蓄能的成本",
                 "抽水蓄能电站的单位投资约为每千瓦六千元。抽水蓄能的电价机制仍在完善。"),
    ]
    ctx = FakeContext(question="What limits pumped hydro storage?", pages=[distractor, *chinese], locale="en-US")
    step = PlanStep(id="s1", title="Challenges and obstacles", description="pumped hydro storage limits challenges")
    assert ctx.search(step.description)[0].url == distractor.url
    result = OfflineEngine().research(ctx, step, Plan(title="t", locale="en-US", steps=[step]), [])
    numbers = {s.url: s.number for s in ctx.sources()}
    shown = result.notes["sentences"][:5]
    assert shown and {s["source"] for s in shown} <= {numbers[p.url] for p in chinese}
