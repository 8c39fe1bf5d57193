"""Where a Chinese subject ends, in the subject model and in the parts analysis.

A verb said of the subject ("疲劳驾驶引发的事故": what fatigue driving causes) is no part of its name, a
clause mark ends every term, and a later clause with an actor of its own is carried over as a sentence,
not glued on with 的. Questions written for these tests; generated ones for the properties.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research import textre
from research.agents.engines.offline.parts import question_aspects
from research.agents.subject import subject_of


def _terms(question: str) -> list[str]:
    return [t.text for t in subject_of(question, "zh-CN").terms]


@pytest.mark.parametrize(("question", "term"), [
    ("疲劳驾驶引发的事故有多少，怎样预防？", "疲劳驾驶"),  # 引发 before 的: a relative clause's verb
    ("全国碳市场覆盖了多少排放？", "全国碳市场"),  # before the aspect particle 了
    ("房贷提前还款划算吗？", "房贷提前还款"),  # a yes/no question's predicate
    ("固态电池量产面临哪些限制？", "固态电池量产"),  # before a question word
])
def test_a_verb_said_of_the_subject_is_not_part_of_its_name(question: str, term: str) -> None:
    assert term in _terms(question)
    assert not any(t != term and t.startswith(term) for t in _terms(question))


@pytest.mark.parametrize(("question", "term"), [
    ("马拉松比赛中猝死的风险有多大？", "猝死"),  # a verb alone is a noun in use: the risk of sudden death
    ("个税专项附加扣除中，子女教育每月能扣多少？", "专项附加扣除"),  # before a locative, 扣除 is a noun
])
def test_a_verb_used_as_a_noun_stays_the_subject(question: str, term: str) -> None:
    assert any(term in t for t in _terms(question))


def test_a_clause_mark_ends_a_term() -> None:
    assert "排放碳价" not in _terms("全国碳市场覆盖了多少排放，碳价是多少？")
    assert _terms("美国的房子为什么大多是木结构，防火性能怎么样？")[:2] == ["木结构", "防火性能"]
    assert "食品安全风险" in _terms("预制菜的市场规模、食品安全风险和国家标准是怎样的？")


_NOUNS = ["储能电站", "氢燃料电池", "光伏组件", "城际铁路", "海水淡化", "充电桩", "钠离子电池", "碳价", "预制菜"]
_MARKS = ["，", "、", "；", "？", ","]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_NOUNS), min_size=2, max_size=4), st.lists(st.sampled_from(_MARKS), min_size=3,
                                                                          max_size=3))
def test_no_term_spans_a_clause_mark(nouns: list[str], marks: list[str]) -> None:
    question = "".join(f"{n}{m}" for n, m in zip(nouns, marks, strict=False)) + "有多少？"
    clauses = [c for c in textre.compile(r"[，,；;？?！!。、：:]").split(question) if c]
    for term in _terms(question):
        assert any(term in clause for clause in clauses), (term, question)


def test_a_later_clause_with_its_own_actor_takes_the_subject_as_its_object() -> None:
    titles = [a.title for a in question_aspects("儿童安全座椅能降低多少伤亡，孩子几岁以前都要用？", "zh-CN")]
    assert titles == ["儿童安全座椅能降低多少伤亡", "孩子几岁以前都要用儿童安全座椅"]


def test_a_later_clause_that_opens_with_a_time_word_is_a_comment_on_the_subject() -> None:
    titles = [a.title for a in question_aspects("马拉松比赛中猝死的风险有多大，赛前应该做哪些检查？", "zh-CN")]
    assert titles[1] == "马拉松比赛中猝死：赛前应该做哪些检查"
    assert "的赛前" not in titles[1]


@pytest.mark.parametrize(("question", "part"), [
    ("去德国读研究生一年要花多少钱，毕业后能留下来找工作吗？", "去德国读研究生：毕业后能留下来找工作吗"),
    ("在上海交社保每月要交多少，退休以后每月能领多少？", "在上海交社保：退休以后每月能领多少"),
])
def test_a_later_clause_that_opens_with_an_event_and_a_locative_is_a_comment_on_the_subject(question, part) -> None:
    titles = [a.title for a in question_aspects(question, "zh-CN")]
    assert titles[-1] == part


def test_attributes_still_take_the_subject_with_de() -> None:
    titles = [a.title for a in question_aspects("美国的房子为什么大多是木结构，防火性能和使用寿命怎么样？", "zh-CN")]
    assert titles[1:] == ["美国的房子的防火性能怎么样", "美国的房子的使用寿命怎么样"]


@pytest.mark.parametrize(("question", "grammar"), [
    ("中老年人每周应该运动多少，快走和慢跑哪个更好？", {"每周", "应该", "更好"}),
    ("马拉松比赛中猝死的风险有多大，赛前应该做哪些检查？", {"赛前", "应该"}),
    ("美国橄榄球运动员的脑震荡有多常见，规则改了以后减少了多少？", {"以后"}),
])
def test_a_part_s_own_words_are_content_words_not_grammar(question: str, grammar: set[str]) -> None:
    """A part is covered when a page says its own words: a page need not say 应该 or 以后 to answer it."""
    aspects = question_aspects(question, "zh-CN")
    assert aspects
    for aspect in aspects:
        assert aspect.words and not set(aspect.words) & grammar, aspect


# ------------------------------------------------- what is said or asked of the subject is none of its name

@pytest.mark.parametrize(("question", "term", "said"), [
    ("空气炸锅有用吗，做菜省油吗？", "空气炸锅", "有用吗"),  # a modal particle: jieba keeps 有用吗 whole
    ("电子烟的尼古丁少了多少？", "尼古丁", "尼古丁少"),  # the segmenter glued 少 on
    ("电动牙刷的刷毛一般多久换一次？", "刷毛", "刷毛一般"),  # an adverb after a noun
    ("奥司他韦的疗效有多好？", None, "多好"),  # 多 + 好
    ("Linux怎么查看显卡温度，用什么命令？", "显卡温度", "查看显卡温度"),  # the verb after 怎么 is asked
    ("如何清洗空气净化器滤网？", "空气净化器滤网", "清洗空气净化器滤网"),
    ("空气源热泵和燃气壁挂炉相比，冬天取暖费差多少？", "燃气壁挂炉", "燃气壁挂炉相比"),  # a comparison's verb
    ("空气源热泵和燃气壁挂炉相比，冬天取暖费差多少？", "空气源热泵", "费差"),  # a loose 差 before 多少
])
def test_what_is_said_or_asked_of_the_subject_is_no_part_of_its_name(question: str, term: str | None,
                                                                     said: str) -> None:
    terms = _terms(question)
    assert said not in terms
    assert not any(said in t for t in terms)
    if term is not None:
        assert term in terms


@pytest.mark.parametrize(("question", "term"), [
    ("疲劳驾驶引发的事故有多少？", "疲劳驾驶"),  # a rare adjective opening a term names a kind
    ("儿童安全座椅能降低多少伤亡？", "儿童安全座椅"),  # 安全 (an) inside a name
    ("为什么锂电池会鼓包？", "锂电池"),  # 为什么 + a noun: nothing to drop
])
def test_names_with_adjectives_in_them_stay_whole(question: str, term: str) -> None:
    assert term in _terms(question)


_SAID = ["有用吗", "一般", "多好", "少了"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(_NOUNS), st.sampled_from(_SAID))
def test_no_term_ends_in_what_is_said_of_it(noun: str, said: str) -> None:
    for term in _terms(f"{noun}{said}？"):
        assert not term.endswith(said) and not term.endswith(said[:-1] or said), (term, noun, said)


@pytest.mark.parametrize(("text", "word", "char"), [
    ("冬天取暖费差多少", "费差", "差"),  # an adjective before 多少
    ("房价涨了多少", "房价涨", "涨"),  # a verb before an aspect particle
])
def test_a_loose_character_said_of_the_word_before_stays_apart(text: str, word: str, char: str) -> None:
    from research.agents.words import _raw_words

    words = [w for w, _ in _raw_words(text)]
    assert word not in words and char in words


@pytest.mark.parametrize(("text", "word"), [("中国光伏的价格", "光伏"), ("充电桩的数量", "充电桩")])
def test_a_loose_character_before_de_still_ends_its_word(text: str, word: str) -> None:
    from research.agents.words import _raw_words

    assert word in [w for w, _ in _raw_words(text)]


@pytest.mark.parametrize(("question", "term"), [
    ("为什么失眠？", "失眠"),  # the asked verb with no object is the subject itself
    ("怎么备孕？", "备孕"),
    ("如何止咳？", "止咳"),
    ("毛呢大衣怎么洗？", "毛呢大衣"),  # 呢 ends a noun here (毛 + 呢), not a question
    ("视力模糊是什么原因？", "视力模糊"),  # a less common adjective after a noun is part of a name
])
def test_a_name_that_looks_like_what_is_said_of_it_stays(question: str, term: str) -> None:
    assert term in _terms(question)
