"""research/scripts.py: the one place that spells the CJK code-point ranges, and its helpers.

A scan of research/ fails when another module spells a CJK range again (a regex class like
`[\\u4e00-\\u9fff]`, a comparison like `"\\u4e00" <= ch` or `ord(ch) >= 0x4e00`); Hypothesis checks the
helpers against the ranges and against what the code they replaced answered.
"""

from __future__ import annotations

import ast
import codecs
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import research
from research import scripts, textre
from research.agents.text import detect_locale, is_chinese

RESEARCH = Path(research.__file__).resolve().parent
# Unicode blocks of East Asian scripts: Hangul Jamo, CJK radicals to the unified ideographs, Hangul
# Jamo Extended-A, Hangul syllables, compatibility ideographs and forms, half- and full-width forms.
_BLOCKS = ((0x1100, 0x11FF), (0x2E80, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF),
           (0xFE30, 0xFE4F), (0xFF00, 0xFFEF))  # fmt: skip


def _east_asian(code: int) -> bool:
    return any(low <= code <= high for low, high in _BLOCKS)


def _decoded(text: str) -> str:
    """A string constant as a pattern sees it: `\\u4e00` in a raw string is the character too."""
    if "\\" not in text:
        return text
    try:
        return codecs.decode(text.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text


def _spelled_ranges(source: str) -> list[str]:
    """CJK code-point ranges spelled in `source`: `a-b` in a string with either end in an East Asian block,
    and comparisons of a character with such a bound (`"\\u4e00" <= ch`, `ord(ch) <= 0x9fff`)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = _decoded(node.value)
            for i in range(1, len(text) - 1):
                if text[i] == "-" and (_east_asian(ord(text[i - 1])) or _east_asian(ord(text[i + 1]))):
                    found.append(f"line {node.lineno}: {text[i - 1 : i + 2]!r}")
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE)
                                                   for op in node.ops):
            # A range is bounded by an ordering; `"、" in text` names one mark, not a script.
            parts = [node.left, *node.comparators]
            uses_ord = any(isinstance(p, ast.Call) and getattr(p.func, "id", "") == "ord" for p in parts)
            for part in parts:
                if not isinstance(part, ast.Constant):
                    continue
                value = part.value
                if (isinstance(value, str) and len(_decoded(value)) == 1 and _east_asian(ord(_decoded(value)))) or (
                    uses_ord and isinstance(value, int) and _east_asian(value)
                ):
                    found.append(f"line {node.lineno}: comparison with {value!r}")
    return found


def test_the_scan_finds_each_way_of_spelling_a_range():
    sample = '''
A = r"[\\u4e00-\\u9fff]"
B = "[\u3040-\u30ff]+"
C = f"[{x}\\uac00-\\ud7af]"
def f(ch):
    return "\\u4e00" <= ch <= "\\u9fff" or ord(ch) >= 0x3400
'''
    found = _spelled_ranges(sample)
    assert len(found) == 6, found  # three classes, two string bounds, one ord() bound
    assert _spelled_ranges('A = "[a-z0-9]"\nB = "中文。-"\nC = n > 20000\nD = "，。"\nE = "、" in s\n') == []


def test_no_module_but_scripts_spells_a_cjk_range():
    offenders = {}
    for path in sorted(RESEARCH.rglob("*.py")):
        if path == RESEARCH / "scripts.py" or "migrations" in path.parts:
            continue
        found = _spelled_ranges(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(RESEARCH.parent))] = found
    assert offenders == {}, f"use research.scripts instead: {offenders}"


# Characters around every range bound, and some of each script.
_BOUNDARIES = sorted({chr(c + d) for c in (0x1100, 0x11FF, 0x2E80, 0x3000, 0x303F, 0x3040, 0x30FF, 0x3400, 0x4DBF,
                                           0x4E00, 0x9FFF, 0xA960, 0xAC00, 0xD7AF, 0xF900, 0xFAFF, 0xFE30, 0xFF00,
                                           0xFFEF) for d in (-1, 0, 1)} - {chr(c) for c in range(0xD800, 0xE000)})
_CHARS = st.one_of(
    st.sampled_from(_BOUNDARIES),
    st.characters(min_codepoint=0x3000, max_codepoint=0x9FFF),
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7AF),
    st.characters(max_codepoint=0x7F),
    st.characters(blacklist_categories=("Cs",)),
)
_TEXT = st.text(_CHARS, max_size=40)


@given(_CHARS)
def test_character_helpers_match_their_ranges(char):
    assert scripts.is_han(char) == bool(textre.fullmatch(f"[{scripts.HAN}]", char))
    assert scripts.is_cjk(char) == bool(textre.fullmatch(f"[{scripts.CJK}]", char))
    assert scripts.in_ranges(char, scripts.HAN) == scripts.is_han(char)
    assert scripts.in_ranges(char, scripts.KANA + scripts.HANGUL) == (
        scripts.is_cjk(char) and not scripts.is_han(char)
    )
    if scripts.is_han(char):
        assert scripts.is_cjk(char) and scripts.in_ranges(char, scripts.CJK_FONT) and scripts.in_ranges(
            char, scripts.WIDE
        )
    if scripts.in_ranges(char, scripts.HAN_COMMON):
        assert scripts.is_han(char) and scripts.has_common_han(char)


@given(_TEXT)
def test_text_helpers_agree_with_the_character_ones(text):
    assert scripts.has_han(text) == any(scripts.is_han(ch) for ch in text)
    assert scripts.count_han(text) == sum(scripts.is_han(ch) for ch in text)
    assert scripts.has_common_han(text) == any(scripts.in_ranges(ch, scripts.HAN_COMMON) for ch in text)


def _old_detect_locale(text: str, default: str = "en-US") -> str:
    """research/agents/text.py's detect_locale before research/scripts.py, for the no-change check."""
    letters = [ch for ch in text if not ch.isspace() and not ch.isdigit()]
    if not letters:
        return default
    if textre.search(r"[\u3040-\u30ff]", text):
        return "ja-JP"
    if textre.search(r"[\uac00-\ud7af]", text):
        return "ko-KR"
    cjk = len(textre.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]", text))
    if cjk and cjk / len(letters) >= 0.2:
        return "zh-CN"
    return default


@given(_TEXT)
def test_script_of_answers_what_detect_locale_did(text):
    assert detect_locale(text) == _old_detect_locale(text)
    assert detect_locale(text, default="") == _old_detect_locale(text, default="")
    script = scripts.script_of(text)
    assert (script == "none") == all(ch.isspace() or ch.isdigit() for ch in text)
    if script == "han":
        assert scripts.has_han(text)


@given(_TEXT, st.sampled_from(["\u3042", "\u30ab"]), st.sampled_from(["\uac00", "\ud55c"]))
def test_kana_decides_before_hangul_and_han(text, kana, hangul):
    assert scripts.script_of(text + kana) == "kana"
    assert scripts.script_of(hangul + text + kana) == "kana"
    if not any(scripts.in_ranges(ch, scripts.KANA) for ch in text):
        assert scripts.script_of(text + hangul) == "hangul"


@given(st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=20),
       st.text(st.sampled_from("abc xyz"), max_size=20))
def test_chinese_text_is_han_and_latin_is_other(han, latin):
    assert scripts.script_of(han) == "han"
    assert scripts.script_of(han + latin) == ("han" if len(han) / len(han + latin.replace(" ", "")) >= 0.2 else "other")
    if latin.strip():
        assert scripts.script_of(latin) == "other"


@given(_TEXT, st.sampled_from(["zh-CN", "zh-TW", "ZH", "en-US", "ja-JP", "ko-KR", "de-DE", ""]))
def test_same_script_is_chinese_or_not_as_the_offline_engine_asked(text, locale):
    # What research/agents/engines/offline.py's _same_script answered before research/scripts.py.
    assert scripts.same_script(text, locale) == (is_chinese(_old_detect_locale(text)) == is_chinese(locale))
    assert scripts.locale_script(locale) == {"zh": "han", "ja": "kana", "ko": "hangul"}.get(locale[:2].lower(), "other")
