"""Writing systems: "is this CJK?", "which script?" and "same script?" (no Django, no model).

The one place in `research/` that spells the code-point ranges of Chinese, Japanese and Korean text
(tests/test_scripts.py fails on a range written anywhere else). Each range is named for what it is
for; callers build their own patterns from them (`f"[{scripts.HAN}]"`) or ask the helpers below.
"""

from __future__ import annotations

from typing import Literal

from research import textre

# CJK Unified Ideographs: the characters of everyday Chinese (and Japanese kanji).
HAN_COMMON = "\u4e00-\u9fff"
# Han ideographs: the common block plus Extension A and the compatibility ideographs.
HAN = "\u3400-\u4dbf" + HAN_COMMON + "\uf900-\ufaff"
KANA = "\u3040-\u30ff"  # Hiragana and Katakana
HANGUL = "\uac00-\ud7af"  # Hangul syllables
# The letters of Chinese, Japanese and Korean text: written without spaces between words, so the
# tokenizers (research.ir) cut them into character bigrams.
CJK = KANA + "\u3400-\u4dbf" + HAN_COMMON + "\uf900-\ufaff" + HANGUL
CJK_PUNCTUATION = "\u3000-\u303f"  # CJK symbols and punctuation: 、。「」…
FULLWIDTH = "\uff00-\uffef"  # half-width and full-width forms: ，！？（）０-９
# What a CJK font draws rather than a Latin one: radicals, CJK punctuation, kana, bopomofo and the
# ideographs (U+2E80 to U+9FFF as one run), compatibility ideographs and full-width forms.
CJK_FONT = "\u2e80-\u9fff\uf900-\ufaff" + FULLWIDTH
# What a BPE vocabulary of a Qwen-class model spends about one token per character on: the CJK
# font's characters, Hangul (jamo and syllables) and the vertical compatibility forms.
WIDE = "\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f" + FULLWIDTH

Script = Literal["han", "kana", "hangul", "other", "none"]


def _bounds(ranges: str) -> tuple[tuple[str, str], ...]:
    """("a", "b") pairs of a range string made of "a-b" triples, for comparing characters without a regex call."""
    return tuple((ranges[i], ranges[i + 2]) for i in range(0, len(ranges), 3))


_HAN_BOUNDS = _bounds(HAN)
_CJK_BOUNDS = _bounds(CJK)
_HAN_CHAR = textre.compile(f"[{HAN}]")
_HAN_COMMON_CHAR = textre.compile(f"[{HAN_COMMON}]")
_KANA_CHAR = textre.compile(f"[{KANA}]")
_HANGUL_CHAR = textre.compile(f"[{HANGUL}]")


def is_han(char: str) -> bool:
    """One Han ideograph (HAN)."""
    return len(char) == 1 and any(low <= char <= high for low, high in _HAN_BOUNDS)


def is_cjk(char: str) -> bool:
    """One CJK letter: Han, kana or Hangul (CJK)."""
    return len(char) == 1 and any(low <= char <= high for low, high in _CJK_BOUNDS)


def in_ranges(char: str, ranges: str) -> bool:
    """One character inside one of the "a-b" ranges of `ranges` (one of the constants above, or several joined)."""
    return len(char) == 1 and any(low <= char <= high for low, high in _bounds(ranges))


def has_han(text: str) -> bool:
    return _HAN_CHAR.search(text) is not None


def has_common_han(text: str) -> bool:
    """A character of the common ideograph block (HAN_COMMON): "is this Chinese?" for short words and queries."""
    return _HAN_COMMON_CHAR.search(text) is not None


def count_han(text: str) -> int:
    return len(_HAN_CHAR.findall(text))


def script_of(text: str) -> Script:
    """The script `text` is written in: "kana" (Japanese) where any kana appears, "hangul" (Korean) where
    any Hangul does, "han" (Chinese) where Han ideographs are at least a fifth of its letters, "other"
    for any other letters (Latin, Cyrillic …), and "none" for no letters at all (digits, spaces)."""
    letters = sum(1 for ch in text if not ch.isspace() and not ch.isdigit())
    if not letters:
        return "none"
    if _KANA_CHAR.search(text):
        return "kana"
    if _HANGUL_CHAR.search(text):
        return "hangul"
    han = count_han(text)
    return "han" if han and han / letters >= 0.2 else "other"


_LOCALE_SCRIPTS: dict[str, Script] = {"zh": "han", "ja": "kana", "ko": "hangul"}


def locale_script(locale: str) -> Script:
    """The script of a locale's language: zh → "han", ja → "kana", ko → "hangul", anything else "other"."""
    return _LOCALE_SCRIPTS.get(locale.lower()[:2], "other")


def same_script(text: str, locale: str) -> bool:
    """Whether `text` is written in the script of `locale`'s language, as far as comparing words goes:
    in Chinese characters, or not (a page in the question's script can be matched term by term, one in
    another cannot). Kana and Hangul count as "not Chinese" here, as they do for the report language."""
    return (script_of(text) == "han") == (locale_script(locale) == "han")
