"""A page that defines an abbreviation of the subject names the subject by it ("spray polyurethane foam
(SPF)", "肺炎支原体（MP）"): a title "SPF insulation …" or "MP感染 …" is about the subject, not another kind
of insulation or infection. The abbreviation is taken only where the name before its brackets is a name
of the subject (English: its initials). Pages written for these tests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.subject import _page_abbreviations, page_about, subject_of

EN = "How much does spray polyurethane foam insulation cost?"
EN_PAGE = ("SPF insulation: prices per square foot in 2025",
           "Installers quote prices by the board foot. Our survey of 40 contractors found that spray "
           "polyurethane foam (SPF) costs 1.00 to 1.50 dollars per board foot for open-cell and 1.50 to 2.00 "
           "dollars for closed-cell foam. SPF insulation pays back in about 7 years.")
ZH = "肺炎支原体感染有多常见，怎么治疗？"
ZH_PAGE = ("MP感染流行病学：秋冬季儿童多发",
           "这项调查由疾控中心组织，历时三年，覆盖全国31个省份的城市和农村，调查对象包括各个年龄段的常住居民，"
           "样本量超过七万人。调查显示，我国一般人群肺炎支原体（MP）感染率约为5.9%，儿童占七成。"
           "MP感染多在秋冬季发生，治疗首选阿奇霉素。")


@pytest.mark.parametrize(("question", "locale", "page"), [(EN, "en-US", EN_PAGE), (ZH, "zh-CN", ZH_PAGE)])
def test_a_title_naming_the_subject_by_the_page_s_abbreviation_is_about_it(question, locale, page):
    verdict = page_about(subject_of(question, locale), *page)
    assert verdict.about, verdict


@pytest.mark.parametrize(("question", "locale", "page"), [(EN, "en-US", EN_PAGE), (ZH, "zh-CN", ZH_PAGE)])
def test_the_same_title_without_the_definition_is_still_another_kind(question, locale, page):
    title, text = page
    undefined = text.replace("（MP）", "").replace(" (SPF)", "")
    verdict = page_about(subject_of(question, locale), title, undefined)
    assert not verdict.about, verdict


def _cores(question: str, locale: str) -> tuple[tuple[str, ...], ...]:
    return tuple(t.core for t in subject_of(question, locale).terms)


def test_an_abbreviation_is_the_name_s_initials_in_english():
    cores = _cores(EN, "en-US")
    assert dict(_page_abbreviations(cores, "", "We used spray polyurethane foam (SPF) here.")) == {
        "spf": "spray polyurethane foam"}
    # Letters that are not the initials of the words before them, or a name not of the subject: none.
    assert _page_abbreviations(cores, "", "We used spray polyurethane foam (SF) here.") == ()
    assert _page_abbreviations(cores, "", "The Environmental Protection Agency (EPA) tested it.") == ()


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="abcdefg (),.ABCDEFG", max_size=60))
def test_text_without_the_subject_defines_no_abbreviation(noise: str):
    assert _page_abbreviations(_cores(EN, "en-US"), noise, "") == ()
    assert _page_abbreviations(_cores(ZH, "zh-CN"), "", noise) == ()
