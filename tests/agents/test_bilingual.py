"""English pages found for a Chinese question (issue 32: Chinese within 10 points of English): a step ranks
their sentences by the English of its own words (CC-CEDICT's glosses), so a step on limits quotes the
sentences on limits, not what the search engine's best titles say in every step. Pages written for these tests."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.bilingual import _by_parts, glosses, in_english
from research.agents.engines.offline import OfflineEngine
from research.agents.types import PlanStep, SourceRef
from research.agents.words import _raw_words
from tests.support.fake_context import FakeContext

QUESTION = "固态电池量产面临哪些限制？"
MARKET = ("Solid-state battery market forecast",
          "Market researchers forecast that solid-state battery sales could reach 8 billion dollars a year by 2032. "
          "The solid-state battery market was worth less than 100 million dollars in 2024, mostly thin-film cells. "
          "Several solid-state battery makers say their cells will reach cars between 2027 and 2028.")
LIMITS = ("Making solid-state cells at scale",
          "Laboratory cells have shown high energy density for years. "
          "The main limit is the dry room: sulfide electrolytes react with moisture, which restricts where cells "
          "can be made. Oxide ceramics are brittle and need sintering above 1,000 degrees Celsius.")


def test_glosses_are_the_first_meanings_without_notes():
    assert {"restrict", "limit"} <= set(glosses("限制"))
    assert glosses("电池") == ("battery",)  # "CL:節|节[jie2]" is a classifier note, not a meaning
    assert all("sth" not in g.split() and "(" not in g for g in glosses("面临"))
    assert glosses("没有这个词") == ()


def test_grammar_words_have_no_english_and_compounds_go_by_their_parts():
    english = in_english(QUESTION)
    assert "battery" in english and "limit" in english and "mass-produce" in english
    assert in_english("哪些的吗") == ""
    assert in_english("solid-state batteries") == ""  # no Chinese: nothing to gloss
    # A compound the dictionary lacks is read by the longest headwords it is made of.
    assert glosses("木结构") == () and "structure" in _by_parts("木结构")


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet=st.sampled_from("固态电池量产面临哪些限制的和是在中国风险挑战与障碍，？ab1"), max_size=30))
def test_the_english_of_any_chinese_text_is_plain_english_words(text: str) -> None:
    english = in_english(text)
    assert english.isascii()
    assert "sth" not in english.split() and "CL:" not in english
    if not any(lang == "zh" for _, lang in _raw_words(text)):
        assert english == ""


def test_a_chinese_step_over_english_pages_quotes_the_sentences_on_its_facet():
    ctx = FakeContext(question=QUESTION, locale="zh-CN")
    sources = [SourceRef(1, "https://pages.example/market", *MARKET, "web"),
               SourceRef(2, "https://pages.example/limits", *LIMITS, "web")]
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    step = next(s for s in plan.steps if s.title == "挑战与障碍")
    ranked, fallback, _ = engine.rank_step(ctx, step, plan, sources, shown=2)
    assert not fallback
    # Without the glosses, the market page's title words ("solid-state battery") decided every step's order.
    assert "limit is the dry room" in ranked[0].text
    assert sum("market" in r.text for r in ranked[:2]) <= 1


def test_a_step_over_pages_in_the_question_s_own_script_ranks_as_before():
    # Chinese pages for a Chinese question: no glosses are added (they would only dilute the query).
    ctx = FakeContext(question=QUESTION, locale="zh-CN")
    page = SourceRef(1, "https://pages.example/zh", "固态电池量产的限制",
                     "固态电池量产面临的主要限制是干燥车间成本高。固态电解质很脆，需要高温烧结。", "web")
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    step = PlanStep(id="s", title="挑战与障碍", description="固态电池量产 限制 挑战 障碍 风险", step_type="research",
                    need_search=True, depends_on=[])
    ranked, _, _ = engine.rank_step(ctx, step, plan, [page], shown=2)
    assert ranked and "限制" in ranked[0].text
