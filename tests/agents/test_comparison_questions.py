"""Questions that set their subject beside another thing ("Is a heat pump cheaper to run than a gas boiler?",
"燕麦奶比牛奶健康吗？"): the thing asked about is the subject, the thing after "than", "vs" or 比 is only what
it is set beside, and the comparative is said of the subject, never a word of its name. Questions and pages
written for these tests; none comes from the eval corpus."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from research.agents.scope import subject_phrase
from research.agents.subject import page_about, subject_of
from research.agents.text import key_terms
from research.agents.zhtag import zh_beside_pieces, zh_comparison_marks

HEAT_PUMP_PAGE = (
    "What a heat pump costs to run",
    "A heat pump moves heat from outside air into the house. An air-source heat pump delivers about three units "
    "of heat per unit of electricity, so a typical home spends around 900 pounds a year to run one.",
)
BOILER_PAGE = (
    "Gas boiler running costs explained",
    "A gas boiler burns natural gas to heat water. A modern condensing gas boiler is about 90 percent efficient, "
    "and a typical home spends around 1,100 pounds a year on gas for it.",
)


@pytest.mark.parametrize(("question", "first"), [
    ("Is a heat pump cheaper to run than a gas boiler?", "heat pump"),
    ("Heat pump vs gas boiler running costs", "heat pump"),
    ("Is tap water safer than bottled water?", "tap water"),
    ("Are standing desks better than sitting desks for back pain?", "standing desks"),
    ("Are LED bulbs cheaper to run compared to halogen bulbs?", "led bulbs"),
])
def test_the_thing_set_beside_is_never_the_first_term(question: str, first: str):
    terms = subject_of(question, "en-US").terms
    assert terms[0].text.lower() == first


def test_a_comparative_after_the_subject_is_no_word_of_its_name():
    subject = subject_of("Is oat milk healthier than cow's milk?", "en-US")
    assert subject.terms[0].head == "oat"
    assert all("healthier" not in t.words for t in subject.terms)
    assert subject_phrase("Is a heat pump cheaper to run than a gas boiler?", "en-US") == ("heat", "pump")


def test_a_page_on_the_subject_alone_is_about_it_and_one_on_the_other_side_is_not():
    subject = subject_of("Is a heat pump cheaper to run than a gas boiler?", "en-US")
    assert page_about(subject, *HEAT_PUMP_PAGE).about
    assert not page_about(subject, *BOILER_PAGE).about


@pytest.mark.parametrize(("clause", "marks"), [
    ("燕麦奶比牛奶健康吗", [3]),  # glued by the segmenter (奶比), no word of its dictionary
    ("电动车比油车保养便宜吗", [3]),
    ("iPhone比安卓手机贵多少", [6]),
    ("比特币价格", []),
    ("比较好的空调", []),
    ("比亚迪汉续航", []),
    ("比例是多少", []),
    ("和跑步比起来游泳怎么样", []),  # the thing set beside comes first there
    ("新能源汽车占比多少", []),  # after a verb: a share
    ("女性体脂比多少正常", []),  # before 多少: a ratio
    ("中国队3比0战胜日本了吗", []),  # a score
    ("日比谷公园怎么去", []),  # inside a name
])
def test_a_comparison_mark_is_a_bi_outside_any_word(clause: str, marks: list[int]):
    assert zh_comparison_marks(clause) == marks


@given(st.text(alphabet="比较燕麦奶牛健康吗起来特币例电动车油", max_size=16))
def test_cutting_at_comparison_marks_loses_nothing(clause: str):
    assert "比".join(zh_beside_pieces(clause)) == clause


def test_a_chinese_comparison_names_its_subject_first():
    subject = subject_of("燕麦奶比牛奶健康吗？", "zh-CN")
    assert [t.text for t in subject.terms] == ["燕麦奶"]
    assert [t.text for t in subject_of("电动车比油车保养便宜吗？", "zh-CN").terms] == ["电动车", "油车"]
    assert subject_phrase("燕麦奶比牛奶健康吗？", "zh-CN") == ("燕麦奶",)
    assert key_terms("空气源热泵比燃气壁挂炉省钱吗？", "zh-CN")[:2] == ["空气源热泵", "燃气壁挂炉省钱"]
    page = ("燕麦奶的营养成分",
            "燕麦奶由燕麦和水制成，每100毫升含糖约4克。燕麦奶的蛋白质比较少，很多品牌会额外添加钙。")
    assert page_about(subject, *page).about


@pytest.mark.parametrize(("question", "terms"), [
    ("布洛芬会伤胃吗？", ["布洛芬"]),
    ("二手房怎么过户？", ["二手房"]),
    ("空气炸锅做饭健康吗，会不会致癌？", ["空气炸锅做饭"]),
])
def test_what_ends_a_chinese_clause_after_a_modal_or_how_is_said_of_the_subject(question: str, terms: list[str]):
    assert [t.text for t in subject_of(question, "zh-CN").terms] == terms


@pytest.mark.parametrize(("question", "term"), [
    ("个人可以退税吗？", "退税"),  # nothing named before it: it is the subject
    ("孕妇可以吃螃蟹吗？", "螃蟹"),  # a verb with its object: the object stays
])
def test_with_no_subject_before_it_or_an_object_after_it_the_word_stays(question: str, term: str):
    assert term in [t.text for t in subject_of(question, "zh-CN").terms]


def test_worth_opens_the_predicate_like_a_modal():
    # 值得 + verb ("worth buying") is said of the subject: no word of its name, in the parts or the subject model.
    question = "智能马桶值得买吗，有哪些缺点？"
    assert [t.text for t in subject_of(question, "zh-CN").terms] == ["智能马桶"]
    assert subject_phrase(question, "zh-CN") == ("智能", "马桶")


@pytest.mark.parametrize(("question", "terms"), [
    ("考研和考公哪个更难？", ["考研", "考公"]),  # 更难 is glued by the segmenter: 更 + 难, said of both
    ("公积金贷款和商业贷款哪个划算？", ["公积金贷款"]),  # which of them is 划算: no third subject
])
def test_which_and_more_open_a_predicate(question: str, terms: list[str]):
    assert [t.text for t in subject_of(question, "zh-CN").terms] == terms


def test_a_degree_word_that_is_a_word_of_its_own_stays_whole():
    from research.agents.words import zh_unglued

    assert zh_unglued("更难") == ["更", "难"]
    assert zh_unglued("更新") == ["更新"]
    assert zh_unglued("最近") == ["最近"]


@pytest.mark.parametrize(("question", "terms"), [
    ("猫粮怎么选，国产猫粮靠谱吗？", ["猫粮", "国产猫粮"]),  # 猫粮靠谱, glued by the segmenter, is cut before 靠谱
    ("电热毯安全吗？", ["电热毯"]),
])
def test_a_yes_no_predicate_is_no_word_of_the_subject(question: str, terms: list[str]):
    assert [t.text for t in subject_of(question, "zh-CN").terms] == terms


def test_a_noun_before_the_yes_no_particle_stays():
    assert "膝盖" in [t.text for t in subject_of("跑步机跑步伤膝盖吗？", "zh-CN").terms]


@pytest.mark.parametrize(("question", "first"), [
    ("Is rice healthier than quinoa?", "rice"),  # one common word before the mark is still the subject
    ("咖啡比康普茶更提神吗？", "咖啡"),
])
def test_a_subject_of_one_common_word_is_never_replaced_by_the_foil(question: str, first: str):
    locale = "zh-CN" if "咖啡" in question else "en-US"
    assert subject_of(question, locale).terms[0].text.lower() == first


@pytest.mark.parametrize(("question", "term"), [
    ("Best oven cleaner for burnt grease", "oven cleaner"),
    ("Is a bottle warmer necessary for a newborn?", "bottle warmer"),
])
def test_a_noun_in_er_is_no_comparative(question: str, term: str):
    assert term in [t.text for t in subject_of(question, "en-US").terms]


def test_a_verb_with_its_object_after_a_modal_stays():
    assert "喝啤酒" in [t.text for t in subject_of("痛风能喝啤酒吗", "zh-CN").terms]


def test_a_degree_word_of_a_noun_stays_whole():
    assert subject_of("最低工资标准是多少", "zh-CN").terms[0].text == "最低工资标准"


def test_the_dictionary_is_read_in_a_fresh_process():
    # jieba loads its dictionary on first use: a count asked before any tagging must not read 0.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "from research.agents.words import zh_unglued; "
                          "print(zh_unglued('更新'), zh_unglued('更难'))"],
                         capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split("\n")[0] == "['更新'] ['更', '难']"
