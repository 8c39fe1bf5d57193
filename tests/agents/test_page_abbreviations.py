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


def _terms(question: str, locale: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((t.text, t.core) for t in subject_of(question, locale).terms)


def test_an_abbreviation_is_the_name_s_initials_in_english():
    terms = _terms(EN, "en-US")
    assert dict(_page_abbreviations(terms, "", "We used spray polyurethane foam (SPF) here.")) == {
        "SPF": "spray polyurethane foam"}
    # Letters that are not the initials of the words before them, or a name not of the subject: none.
    assert _page_abbreviations(terms, "", "We used spray polyurethane foam (SF) here.") == ()
    assert _page_abbreviations(terms, "", "The Environmental Protection Agency (EPA) tested it.") == ()


@pytest.mark.parametrize("text", [
    "长期肺炎支原体感染是哮喘（AS）的危险因素。",  # the bracket follows another thing the sentence names
    "治疗肺炎支原体常用大环内酯类抗生素（MA）。",
])
def test_a_chinese_abbreviation_must_follow_the_subject_s_own_name(text: str):
    assert _page_abbreviations(_terms(ZH, "zh-CN"), "", text) == ()


def test_an_abbreviation_is_read_in_the_case_the_page_wrote_it():
    from research.agents.subject import names_subject

    subject = subject_of("How is myalgic encephalomyelitis diagnosed?", "en-US")
    page = "Myalgic encephalomyelitis (ME) is hard to diagnose. My GP told me to rest. ME affects many adults."
    assert names_subject(subject, "ME affects many adults.", page, title="ME: a guide")
    assert not names_subject(subject, "My GP told me to rest.", page, title="ME: a guide")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["SF", "SPFI", "SPX", "FPS", "PS"]), st.sampled_from(["", "We sprayed ", "Cheap "]))
def test_letters_that_are_not_the_name_s_initials_define_nothing(short: str, lead: str):
    text = f"{lead}spray polyurethane foam ({short}) keeps heat in."
    assert _page_abbreviations(_terms(EN, "en-US"), "", text) == ()


# -- a Chinese contraction of two subject terms: a character of each (稻鸭 for 稻田 and 鸭子) ---------------

RICE_DUCKS = "稻田里养鸭子能少打多少农药？"


@pytest.mark.parametrize("page", [
    ("稻鸭共作：一亩田少打三遍农药", "稻鸭共作的田里，鸭子吃掉害虫和杂草，每亩可以少打三遍农药。"),
    ("鸭稻共生模式的农药用量调查", "调查的二十户农户里，鸭稻共生的农户平均每亩少用农药40%。鸭稻共生也省化肥。"),
])
def test_a_title_naming_the_subject_by_a_chinese_contraction_is_about_it(page):
    assert page_about(subject_of(RICE_DUCKS, "zh-CN"), *page).about


@pytest.mark.parametrize("page", [
    # 田稻 is in 青田稻鱼 but across two words (青田, 稻鱼): no contraction.
    ("青田稻鱼共生系统", "青田稻鱼共生系统已有一千多年历史，鱼吃掉害虫。青田稻鱼很有名，每亩少打两遍农药。"),
    # Ducks in a pond: no character of 稻田 beside one of 鸭子, so nothing is read as the field.
    ("池塘养鸭子要打多少药", "池塘里的鸭子容易生病，一年要用三次药。"),
    # 稻子 is rice: 子, a noun suffix, never stands for 鸭子.
    ("稻子生了稻飞虱要打几遍农药", "稻子到了分蘖期容易生虫。稻子生虫后要打两遍农药。"),
])
def test_characters_of_two_terms_across_words_or_apart_are_no_contraction(page):
    subject = subject_of(RICE_DUCKS, "zh-CN")
    assert subject.on_page(*page).abbreviations == ()
    assert not page_about(subject, *page).about
