"""Sentence splitting, tokenizing, BM25, near-duplicates and ranking for the offline engine."""

from __future__ import annotations

import re
import textwrap

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from research.agents.rank import BM25, near_duplicate, rank_sentences, split_sentences, stem, tokenize
from research.agents.text import detect_locale, key_terms

PAGE = """Home
Products
About us

# Solid-state batteries explained

Accept all cookies to continue browsing this website today.

Solid-state batteries replace the liquid electrolyte with a solid ceramic or polymer, which
could make electric vehicles safer and lighter.[3] Dr. Smith of the U.S. Department of Energy
said pack costs fell 3.5 percent in 2023. Is that fast enough? Probably not, analysts say.

- Toyota plans to sell its first solid-state battery car in 2027, according to the company.
- 2021 2022 2023 2024 2025 2026 2027 2028 2029 2030.

| Year | Cost |
|------|------|
| 2023 | 139  |

See [the report](https://example.com/report) for the numbers behind these estimates.
More details are at https://example.com/details for anyone who wants the underlying figures.
"""

ZH_PAGE = """首页 | 新闻 | 关于我们

固态电池使用固态电解质代替液态电解液，被认为能显著提高电动汽车的安全性。
据行业机构统计，2023年全球固态电池相关专利申请数量超过一万件！业内人士认为量产仍需数年时间？
版权所有 © 2024 某某科技网站，保留所有权利。
"""


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_split_sentences_english_keeps_verbatim_prose_only():
    sentences = split_sentences(PAGE, "en-US")
    assert sentences == [
        "Solid-state batteries replace the liquid electrolyte with a solid ceramic or polymer, which "
        "could make electric vehicles safer and lighter.",
        "Dr. Smith of the U.S. Department of Energy said pack costs fell 3.5 percent in 2023.",
        "Toyota plans to sell its first solid-state battery car in 2027, according to the company.",
    ]
    # Every sentence is a slice of the page once whitespace is collapsed (the hard wrap above).
    for sentence in sentences:
        assert sentence in _squash(PAGE)


def test_split_sentences_chinese():
    sentences = split_sentences(ZH_PAGE, "zh-CN")
    assert sentences == [
        "固态电池使用固态电解质代替液态电解液，被认为能显著提高电动汽车的安全性。",
        "据行业机构统计，2023年全球固态电池相关专利申请数量超过一万件！",
        "业内人士认为量产仍需数年时间？",
    ]


@pytest.mark.parametrize("sentence", [
    "例如2020—2021年冬季，德国监测到的热泵平均效率仅约2.8。",
    "2023年全国新建充电桩338万台，同比增长65%。",
    "赔偿标准按航程确定：800公里以内的航班赔150元，800至2000公里的航班赔300元。",
])
def test_a_chinese_sentence_of_figures_is_content(sentence: str):
    # Its digits are what it says: it is no table row, though fewer than 60% of its characters are Han.
    assert split_sentences(f"热泵的效率随气温下降。{sentence}", "zh-CN")[-1] == sentence


@pytest.mark.parametrize("row", ["2019 2020 2021 2022 2023年。", "1.2 3.4 5.6 7.8 9.0 11.2 13.4万元。",
                                 "1.北京 2.上海 3.广州 4.深圳 5.杭州 6.成都。",
                                 "北京市 12.3% 上海市 11.2% 广州市 9.8%。"])
def test_a_chinese_line_of_numbers_alone_is_still_no_sentence(row: str):
    assert row not in split_sentences(f"热泵的效率随气温下降而下降。{row}", "zh-CN")


def test_split_sentences_does_not_glue_menu_items_to_prose():
    text = "Home\nNews\nQuantum computers use qubits that can represent zero and one at the same time."
    assert split_sentences(text) == ["Quantum computers use qubits that can represent zero and one at the same time."]


def test_split_sentences_does_not_glue_a_long_title_to_its_first_paragraph():
    # A fetched page's text opens with its title line; one of 50 characters or more was taken for wrapped prose
    # and quoted glued to the first sentence ("Why solid-state batteries are hard to make at scale A solid…").
    title = "Why solid-state batteries are hard to make at scale"
    first = ("A solid-state battery replaces the flammable liquid electrolyte of a lithium-ion cell with a solid "
             "one, usually a ceramic.")
    text = f"{title}\n{first} The idea is decades old, and laboratory cells have shown high energy density."
    sentences = split_sentences(text)
    assert sentences[0] == first
    assert not any(title in sentence for sentence in sentences)


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
_SENTENCE = st.lists(_WORD, min_size=8, max_size=30).map(lambda words: " ".join(words).capitalize() + ".")


@settings(max_examples=60, deadline=None)
@given(sentences=st.lists(_SENTENCE, min_size=1, max_size=6), width=st.integers(min_value=64, max_value=100))
def test_hard_wrapped_prose_splits_as_unwrapped(sentences: list[str], width: int) -> None:
    # Prose wrapped at a usual width is one paragraph: its sentences are the unwrapped text's, whole. (Lines under
    # 50 characters are taken for menu items and headings, so narrower wraps are not promised.)
    prose = " ".join(sentences)
    assert split_sentences(textwrap.fill(prose, width=width)) == split_sentences(prose)


@settings(max_examples=60, deadline=None)
@given(title=st.lists(_WORD, min_size=2, max_size=12), paragraph=st.lists(_SENTENCE, min_size=2, max_size=5))
def test_a_title_line_is_never_part_of_a_sentence(title: list[str], paragraph: list[str]) -> None:
    # An unterminated line over a paragraph on one line (as fetch and trafilatura give it) is a heading.
    heading = " ".join(title).capitalize()
    body = " ".join(paragraph)
    assume(len(body) > len(heading) + 24)
    assert split_sentences(f"{heading}\n{body}") == split_sentences(body)


def test_tokenize_english_stems_and_drops_stopwords():
    assert tokenize("The batteries are charging in cities") == ["battery", "charg", "city"]
    assert stem("glass") == "glass" and stem("status") == "status"


def test_tokenize_chinese_bigrams_and_mixed_text():
    assert tokenize("固态电池 GPT-4") == ["固态", "态电", "电池", "gpt", "4"]
    assert tokenize("电") == ["电"]


def test_bm25_prefers_the_relevant_document_and_rare_terms():
    docs = [
        tokenize("Solid-state batteries use a solid electrolyte."),
        tokenize("Lithium-ion batteries use a liquid electrolyte."),
        tokenize("The weather today is sunny with light wind."),
    ]
    bm25 = BM25(docs)
    scores = bm25.score(tokenize("solid electrolyte"))
    assert scores[0] > scores[1] > 0
    assert scores[2] == 0
    assert bm25.idf["solid"] > bm25.idf["electrolyte"]  # rarer term weighs more
    assert BM25([]).score(["x"]) == []


def test_near_duplicate():
    a = "Toyota plans to sell its first solid-state battery car in 2027, according to the company."
    b = "According to the company, Toyota plans to sell its first solid-state battery car in 2027."
    c = "Toyota plans to sell its first solid-state battery car in 2027."
    d = "Samsung showed a prototype cell with an energy density of 900 Wh per litre."
    assert near_duplicate(a, a)
    assert near_duplicate(a, b, 0.5)
    assert near_duplicate(a, c)  # contained in the longer sentence
    assert not near_duplicate(a, d)
    assert near_duplicate("固态电池的安全性更高。", "固态电池的安全性更高！")
    assert not near_duplicate("固态电池的安全性更高。", "量子计算机仍处于早期阶段。")


def test_rank_sentences_orders_limits_and_dedupes():
    sentences = [
        ("The weather in Paris was sunny and warm for most of the week.", 1),
        ("Solid-state batteries could double the range of electric vehicles.", 1),
        ("Solid-state batteries could double the range of electric vehicles!", 2),
        ("Electric vehicles sold well in Norway last year, helped by tax breaks.", 2),
        ("Solid-state battery costs remain far above lithium-ion battery costs.", 3),
    ]
    ranked = rank_sentences("solid-state batteries electric vehicles", sentences, limit=3)
    texts = [r.text for r in ranked]
    assert len(ranked) == 3
    assert texts[0] == "Solid-state batteries could double the range of electric vehicles."
    assert "Solid-state batteries could double the range of electric vehicles!" not in texts
    assert all("weather" not in t for t in texts)  # no shared term, never returned
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)
    assert rank_sentences("solid-state batteries electric vehicles", sentences, limit=3) == ranked  # deterministic


def test_rank_sentences_focus_and_topic():
    sentences = [
        ("Solid-state batteries are being tested by several carmakers this year.", 1),
        ("The main challenge for solid-state batteries is the cost of the solid electrolyte.", 1),
        ("The main challenge for heat pumps is the upfront cost of installation.", 2),
    ]
    query = "solid-state batteries challenges"
    plain = rank_sentences(query, sentences, limit=3)
    assert len(plain) == 3  # the heat pump sentence matches "challenge"
    focused = rank_sentences(query, sentences, limit=3, focus="challenges", topic=["solid-state", "batteries"])
    assert [r.text for r in focused] == [sentences[1][0], sentences[0][0]]  # facet first, off-topic dropped
    assert focused[0].score > plain[0].score


def test_rank_sentences_topic_needs_a_third_of_a_chinese_term():
    sentences = [("光伏已经成为中国最大的新增电源类型。", 1), ("中国新能源汽车出口快速增长。", 2)]
    ranked = rank_sentences("中国新能源汽车 现状", sentences, limit=2, locale="zh-CN", topic=["中国新能源汽车"])
    assert [r.source for r in ranked] == [2]  # sharing only "中国" is not enough


def test_rank_sentences_per_source_cap_is_soft():
    sentences = [(f"Solid-state batteries fact number {w} is stated here plainly.", 1) for w in "abcd"]
    sentences.append(("Solid-state batteries are also discussed on a second site.", 2))
    ranked = rank_sentences("solid-state batteries", sentences, limit=3, per_source=1, dedupe_threshold=0.95)
    assert {r.source for r in ranked} == {1, 2}
    assert len(ranked) == 3  # the cap is relaxed when the other source ran dry


def test_rank_sentences_prefers_the_report_language():
    sentences = [("Solid-state batteries 固态电池 are promising.", 1), ("固态电池的前景被普遍看好。", 2)]
    ranked = rank_sentences("固态电池 前景", sentences, limit=2, locale="zh-CN")
    assert ranked[0].source == 2


def test_key_terms():
    terms = key_terms("What is the current state of solid-state batteries?")
    assert terms == ["current", "state", "solid-state", "batteries"]
    assert key_terms("固态电池的发展现状如何？", "zh-CN") == ["固态电池", "发展现状"]
    assert key_terms("AI芯片有哪些主要参与者") == ["AI芯片", "主要参与者"]
    assert key_terms("what is it?") == ["what is it"]
    assert key_terms("what is it?", fallback=False) == []
    assert detect_locale("固态电池的发展现状如何？") == "zh-CN"  # unchanged helper


def test_rank_sentences_mmr_prefers_a_new_point_over_a_restatement():
    sentences = [
        ("Solid-state batteries need dry rooms because sulfide electrolytes react with moisture.", 1),
        ("Sulfide electrolytes react with moisture, so solid-state batteries need dry rooms.", 2),
        ("Separators for solid-state batteries must be thinner than 30 micrometres.", 1),
    ]
    plain = rank_sentences("solid-state batteries dry rooms moisture", sentences, limit=2, dedupe_threshold=0.99)
    assert [r.position for r in plain] == [0, 1]
    diverse = rank_sentences(
        "solid-state batteries dry rooms moisture", sentences, limit=2, dedupe_threshold=0.99, diversity=0.5,
        floor=0.35,
    )
    assert [r.position for r in diverse] == [0, 2]


def test_rank_sentences_floor_keeps_unmatched_sentences_of_relevant_pages_only():
    sentences = [
        ("Pilot lines make well under 1 gigawatt-hour of cells per year.", 1),
        ("The main limits are dry rooms and thin separators.", 1),
        ("Green hydrogen costs 4 to 6 dollars per kilogram today.", 2),
    ]
    weights = {1: 1.0, 2: 0.05}
    ranked = rank_sentences("limits", sentences, limit=3, floor=0.35, source_weight=weights)
    assert [r.position for r in ranked] == [1, 0]  # the match first, then the relevant page's other sentence
    assert [r.position for r in rank_sentences("limits", sentences, limit=3)] == [1]  # no floor: matches only


def test_rank_sentences_ignores_the_shared_subject():
    sentences = [
        ("Solid-state batteries are solid-state batteries with a solid electrolyte.", 1),
        ("Dry rooms add cost to every solid-state battery line.", 1),
    ]
    ranked = rank_sentences("solid-state batteries cost", sentences, limit=1, ignore={"solid", "state", "battery"})
    assert ranked[0].position == 1
