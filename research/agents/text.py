"""Language helpers shared by both engines (no Django, no model)."""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


def detect_locale(text: str, default: str = "en-US") -> str:
    """Guess the locale of a question from its script; good enough to pick a report language."""
    letters = [ch for ch in text if not ch.isspace() and not ch.isdigit()]
    if not letters:
        return default
    if _KANA.search(text):
        return "ja-JP"
    if _HANGUL.search(text):
        return "ko-KR"
    cjk = len(_CJK.findall(text))
    if cjk and cjk / len(letters) >= 0.2:
        return "zh-CN"
    return default


def is_chinese(locale: str) -> bool:
    return locale.lower().startswith("zh")
