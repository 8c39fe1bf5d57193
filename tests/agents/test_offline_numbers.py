"""Figures in source sentences (research/agents/engines/offline/numbers.py): Chinese writes them against its
words, so a CJK character ends a number as a space does; Latin letters glued to digits still do not make one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from research.agents.engines.offline.numbers import _numbers

_HAN = st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=8)


def test_chinese_figures_are_figures():
    assert _numbers(["到2023年底，国内光伏组件的名义产能已超过900吉瓦，产能利用率不到60%。"]) == [900.0, 60.0]
    assert _numbers(["年底主流组件报价已降至每瓦1元左右。"]) == [1.0]
    assert _numbers(["累计数量达到859.6万台，同比增长65%。"]) == [859.6, 65.0]


def test_years_and_glued_latin_names_are_not_figures():
    assert _numbers(["2023年光伏组件价格下跌"]) == []
    assert _numbers(["GPT4 and the H100 cost 1,200.5 dollars in 2023."]) == [1200.5]


@given(before=_HAN, after=_HAN, value=st.integers(min_value=0, max_value=10**9).filter(lambda v: not 1800 <= v <= 2100))
def test_a_number_between_chinese_words_is_found(before, after, value):
    assert _numbers([f"{before}{value}{after}"]) == [float(value)]


@given(word=st.from_regex(r"[A-Za-z]{1,6}", fullmatch=True), value=st.integers(min_value=0, max_value=999))
def test_digits_glued_to_a_latin_word_are_a_name(word, value):
    assert _numbers([f"the {word}{value} model"]) == []
