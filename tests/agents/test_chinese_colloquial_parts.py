"""Chinese questions as people type them: "how long" and "how far" ask too, a hedge (一般, 通常) is no topic,
and a part asked in one-character words (钱能赔多少) is searched and checked by those words.

The questions are written for these tests; none comes from the eval corpus."""

from __future__ import annotations

import pytest

from research.agents import rank
from research.agents.engines.offline import question_aspects


def _parts(question: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(a.title, a.words) for a in question_aspects(question, "zh-CN")]


@pytest.mark.parametrize("question, second", [
    ("这种止咳药多少钱一盒，一般要吃多久？", "要吃多久"),
    ("高铁票退票手续费是多少，离开车多久前退不收钱？", "离开车多久前退不收钱"),
    ("新房装修完甲醛超标有多严重，要通风多久才能住？", "要通风多久才能住"),
    ("这条徒步路线有多长，离市区多远？", "离市区多远"),
])
def test_a_clause_asking_how_long_or_how_far_is_a_part(question, second):
    parts = _parts(question)
    assert len(parts) == 2, parts
    assert parts[1][0].endswith(second)
    assert all("？" not in title for title, _ in parts)


@pytest.mark.parametrize("question", [
    "多年来城市绿化覆盖率变化如何？",  # 多年: many years, no question
    "多种疫苗同时接种安全吗？",
])
def test_many_years_and_many_kinds_ask_nothing(question):
    assert question_aspects(question, "zh-CN") == []


def test_a_hedge_is_no_word_a_part_asks_and_joins_the_subject_without_de():
    parts = _parts("快递丢件能赔多少钱，一般多久能到账？")
    assert len(parts) == 2
    assert parts[1][0] == "快递丢件一般多久能到账"
    assert all("一般" not in words for _, words in parts)


def test_a_part_asked_in_one_character_words_asks_those_words():
    (first, words), _ = _parts("保险公司要是破产了，交的钱能退多少，保单还有效吗？")
    assert words == ("钱", "退")
    assert first.endswith("交的钱能退多少")


def test_a_rate_asked_of_the_subject_is_not_carried_into_the_next_clause():
    parts = _parts("近视手术成功率有多高，术后一般要休息多久？")
    assert len(parts) == 2
    assert parts[1][0].startswith("近视手术")
    assert "成功率" not in parts[1][0]


def test_one_character_query_words_match_the_sentences_that_hold_them():
    assert rank.single_chars(rank.tokenize("钱 退 手续费")) == {"钱", "退"}
    assert "退" in rank.tokenize("退款三个工作日到账", chars={"退"})
    assert "退" not in rank.tokenize("退款三个工作日到账")
    pool = [("手续费按票面价的5%收取，退款三个工作日到账。", 1), ("车站共有十二个候车室。", 2)]
    ranked = rank.rank_sentences("退 钱", pool, limit=2, locale="zh-CN")
    assert [r.source for r in ranked] == [1]
