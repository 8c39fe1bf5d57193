"""A part that asks "how old", "how soon" or "how often" wants its answer in that unit (research.agents.engines.
offline.read.asked_unit): the step ranks the sentence that states an age, a span or a rate ahead of one with
any other figure. The pages are written for these tests; in-memory context, no model, no network."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.engines.offline import OfflineEngine
from research.agents.engines.offline.read import asked_unit, part_kind
from tests.support.fake_context import FakeContext, FakePage


@pytest.mark.parametrize(("part", "sentence", "states"), [
    ("孩子几岁以前都要用儿童安全座椅", "婴幼儿乘车应采用后向安装，至少用到2岁，最好用到4岁。", True),
    ("孩子几岁以前都要用儿童安全座椅", "全国儿童安全座椅的使用率约为20%。", False),  # a share, not an age
    ("How soon should treatment start after a stroke?", "The drug works best within 3 hours.", True),
    ("How soon should treatment start after a stroke?", "About 795,000 people have a stroke each year.", False),
    ("How often should the filter be changed?", "Change it twice a year.", True),
    ("How often should the filter be changed?", "A filter costs 12 dollars.", False),
    ("流感疫苗需要每年都打吗", "建议所有6月龄以上人群每年接种一次。", True),
    ("海水淡化需要多长时间才能收回成本", "2023年共有16座新工厂投产。", False),  # a year is no span
    ("海水淡化需要多长时间才能收回成本", "一般需要8年左右收回投资。", True),
    # A count in words is a count ("within about two hours"); "a year" alone is a rate ("300 euros a year").
    ("How soon should treatment start?", "Give the drug within about two hours of arrival.", True),
    ("How long does a heat pump last?", "Most last fifteen to twenty years.", True),
    ("How long does a heat pump last?", "Servicing costs about 150 euros a year.", False),
    ("How soon should treatment start?", "Rehabilitation starts a few weeks after discharge.", True),
    ("How soon should treatment start?", "Treatment starts in the ambulance.", False),
    ("until what age should a child use one?", "Use it until the child is four years old.", True),
])
def test_a_sentence_states_the_unit_a_part_asks_for(part, sentence, states):
    unit = asked_unit(part)
    assert unit is not None and part_kind(part) == "much"
    assert bool(unit.search(sentence)) is states


@pytest.mark.parametrize(("part", "sentence", "states"), [
    ("苹果园的亩产怎么样", "管理得好的果园，每亩一年可产苹果约4000斤。", True),
    ("苹果园的亩产怎么样", "果园每亩一年的投入约3000元。", False),  # money, not a harvest
    ("东北玉米的单产是多少", "2023年东北玉米总产量约1.2亿吨。", True),
    ("What is the average crop yield of corn in Iowa?", "Iowa farms harvested 200 bushels an acre in 2023.", True),
    ("What is the average crop yield of corn in Iowa?", "Seed costs about 120 dollars an acre.", False),
])
def test_a_yield_is_stated_as_a_weight(part, sentence, states):
    unit = asked_unit(part)
    assert unit is not None
    assert bool(unit.search(sentence)) is states


@pytest.mark.parametrize("part", ["What limits solid-state battery production?", "中国海上风电的发展现状如何",
                                  "Why did insurance premiums rise?"])
def test_a_part_that_asks_no_unit_has_none(part):
    assert asked_unit(part) is None


@settings(deadline=None)  # no timing: the machine may be loaded
@given(st.integers(min_value=1000, max_value=2099))
def test_a_year_is_never_a_span_of_time(year):
    unit = asked_unit("需要多久")
    assert unit is not None
    assert not unit.search(f"该项目于{year}年开工。")
    assert unit.search(f"该项目于{year}年开工，用了3年建成。")


SEATS = FakePage(
    "https://example.org/seat-use", "Child seats: a survey of use",
    "A child seat cuts the risk of death in a crash by 71 percent for infants and 54 percent for toddlers. "
    "Every child should use child seats on every trip, yet only 20 percent of parents use one on short trips. "
    "Child seats cost between 80 and 400 dollars.",
)
AGES = FakePage(
    "https://example.org/seat-ages", "Child seats: which one, and until when",
    "Experts advise a rear-facing child seat until the child is at least 2 years old, better 4 years old. "
    "A child seat with a harness is used after that. "
    "Child seats are tested in crashes at 50 km/h.",
)


def test_the_step_of_an_age_question_leads_with_the_age():
    question = "How well do child seats protect, and until what age should a child use one?"
    ctx = FakeContext(question=question, pages=[SEATS, AGES])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=3)
    step = next(s for s in plan.steps if "age" in s.title.lower())
    result = engine.research(ctx, step, plan, [])
    first = result.notes["sentences"][0]["text"]
    assert "2 years old" in first, result.notes["sentences"]


def test_the_answer_to_a_how_soon_part_states_the_span_in_any_words():
    from research.agents.engines.offline.parts import question_aspects
    from research.agents.engines.offline.write import _answer, _Section

    question = "What are the warning signs of a stroke, and how soon should treatment start?"
    aspects = question_aspects(question, "en-US")
    soon = next(a for a in aspects if "soon" in a.title.lower())
    # The first shares the part's words and states no time; the second shares none of them and states it.
    worded = {"text": "The standard treatment for a stroke is a clot-dissolving drug.", "source": 1, "score": 2.0}
    timed = {"text": "The drug should be given within about three hours of the first symptom.", "source": 2,
             "score": 1.0}
    section = _Section(soon.title, [worded, timed], "", True, {"asked": ["soon", "treatment", "start"]})
    chosen = [s for label, s in _answer(question, aspects, [section])]
    assert chosen[0] is timed, chosen


@pytest.mark.parametrize(("question", "locale", "asked"), [
    ("苹果园套种大豆和只种苹果相比，亩产和利润怎么样？", "zh-CN", {"亩产", "利润"}),
    ("What are the profits of agrivoltaic farms?", "en-US", {"profit"}),
    ("Why are flood insurance premiums rising in Louisiana?", "en-US", {"premium"}),  # an insurance's price
])
def test_a_yield_a_profit_or_a_premium_is_asked_of_the_subject_never_its_name(question, locale, asked):
    from research.agents.subject import subject_of
    from research.agents.words import _norm

    subject = subject_of(question, locale)
    named = {w for term in subject.terms for w in term.words}
    assert not named & {_norm(w) for w in asked}
    assert subject.terms  # the subject is still there: 苹果园 / agrivoltaic farms
