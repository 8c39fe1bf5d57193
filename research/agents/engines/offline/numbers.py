"""Numbers quoted in source sentences, for the offline engine's rankers and its processing step."""

from __future__ import annotations

from collections.abc import Sequence

from research import scripts, textre

# 1,200 / 3.5 / 42 as whole numbers: not digits glued to words ("GPT4", "H100") or other digits.
# A number is the start of a run of word characters, dots and commas, up to a dot or comma that no digit
# follows, or the whole run (what `(?<![\w.,])…(?!\w|[.,]\d)` meant; RE2 has no lookaround).
_NUMBER_RUN = textre.compile(r"[\w.,]+")
_NUMBER_STOP = textre.compile(r"[.,](?:\D|$)")
_NUMBER = textre.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
# Chinese writes figures against its words ("超过900吉瓦", "约为499吉瓦"): a CJK character ends a run as a
# space does, or no Chinese sentence would hold a number.
_CJK_LETTER = textre.compile(f"[{scripts.CJK}]")


def _number_strings(sentence: str) -> list[str]:
    found = []
    for run in _NUMBER_RUN.findall(_CJK_LETTER.sub(" ", sentence)):
        stop = _NUMBER_STOP.search(run)
        head = run[: stop.start()] if stop else run
        if _NUMBER.fullmatch(head):
            found.append(head)
    return found


def _numbers(sentences: Sequence[str], limit: int = 200) -> list[float]:
    """Numbers quoted in sentences, years (1800–2100 without decimals) left out as they aren't data."""
    values: list[float] = []
    for sentence in sentences:
        for raw in _number_strings(sentence):
            value = float(raw.replace(",", ""))
            if "." not in raw and "," not in raw and 1800 <= value <= 2100:
                continue
            values.append(value)
            if len(values) >= limit:
                return values
    return values
