"""jieba, wrapped once: Chinese words with their part-of-speech tags, and the rules that read only those tags.

Below research.agents.text and research.agents.words (both call it), so the question helpers and the word
layer tag a text the same way, through one cache, without jieba's start-up logging."""

from __future__ import annotations

import logging
from functools import lru_cache

# Hedges: how often or how nearly, never the topic ("电池一般能用几年": the battery) where they stand before a
# predicate; before a noun 一般 is a kind (一般纳税人), so they are whole jieba words read in context, never
# cut out of a run as stop phrases are.
ZH_HEDGES: tuple[str, ...] = ("一般来说", "一般", "通常", "大概", "大约", "往往", "平时")


@lru_cache(maxsize=1)
def quiet_jieba() -> None:
    """jieba (wordfreq's Chinese segmenter) logs its dictionary loading at DEBUG to stderr on import: not news."""
    import jieba

    jieba.setLogLevel(logging.WARNING)


@lru_cache(maxsize=8192)
def zh_tagged(text: str) -> tuple[tuple[str, str], ...]:
    """jieba's (word, part-of-speech tag) pairs of a Chinese text: the one place the tagger is called."""
    import jieba.posseg as posseg

    quiet_jieba()
    return tuple((w, flag) for w, flag in posseg.cut(text))


def hedges_predicate(word: str, following: str) -> bool:
    """A hedge said of the predicate after it (电池 + 一般 + 能用几年), not a kind of the noun after it
    (一般纳税人): `following` is the next word, tagged alone."""
    return word in ZH_HEDGES and not any(flag.startswith("n") for _, flag in zh_tagged(following)[:1])


def zh_dictionary_count(word: str) -> int:
    """How often jieba's dictionary has the word (0 where it lacks it: 奶比, 更难 are the segmenter's glue)."""
    import jieba

    quiet_jieba()
    jieba.dt.check_initialized()  # (the dictionary loads on first use: a count before it would read 0)
    return jieba.dt.FREQ.get(word) or 0


def _nounlike(word: str, flag: str = "") -> bool:
    """A noun, a name, a time word or a Latin word by jieba's tag (tagged alone where no tag is given)."""
    flag = flag or (zh_tagged(word)[:1] or (("", ""),))[0][1]
    return bool(word) and (flag.startswith("n") or flag in ("eng", "t", "vn", "j"))


def zh_comparison_marks(clause: str) -> list[int]:
    """Where a Chinese clause sets one thing beside another with 比 ("燕麦奶比牛奶健康吗", "电动车比油车便宜吗"): a 比
    between two nouns, that the tagger reads as a preposition, or that the segmenter glued to the front or the
    end of a word its dictionary does not know (奶比, 比安卓). Never inside a word (比较, 比例, 比特币, 日比谷), nor
    after a verb or a number (占比, 3比0), before 多少 (体脂比多少), or in 比起来 (the thing set beside comes first)."""
    marks: list[int] = []
    tagged = zh_tagged(clause)
    at = 0
    for i, (word, flag) in enumerate(tagged):
        spot = word.find("比")
        glued = spot >= 0 and word != "比" and not zh_dictionary_count(word) and spot in (0, len(word) - 1)
        if word == "比" and flag == "p" or glued:
            before = word[:spot] or (tagged[i - 1][0] if i else "")
            after = word[spot + 1 :] or (tagged[i + 1][0] if i + 1 < len(tagged) else "")
            # (A piece glued to 比 is read by the glued word's tag: 奶 of 奶比 is the end of a noun.)
            before_flag = flag if word[:spot] else (tagged[i - 1][1] if i else "")
            after_flag = flag if word[spot + 1 :] else (tagged[i + 1][1] if i + 1 < len(tagged) else "")
            if (_nounlike(before, before_flag) and _nounlike(after, after_flag)
                    and not clause.startswith("起来", at + spot + 1)):
                marks.append(at + spot)
        at += len(word)
    return marks


def zh_beside_pieces(clause: str) -> list[str]:
    """A Chinese clause cut at its comparison marks (zh_comparison_marks): 燕麦奶比牛奶健康吗 → 燕麦奶, 牛奶健康吗."""
    bounds = [-1, *zh_comparison_marks(clause), len(clause)]
    return [clause[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]
