"""Tokenizing and chunking for the knowledge base.

Pure functions, no Django: the same tokenizer runs at index time (per chunk) and
at query time, so a query term matches exactly the terms stored for a chunk.
English words are lower-cased, stop words dropped and plurals folded; CJK text
has no spaces between words, so it is indexed as overlapping character bigrams
(the classic approach of Lucene's CJK analyzer), which needs no dictionary.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

# Han (incl. extension A and compatibility), kana and hangul.
_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
# One pass gives either a run of CJK characters or a run of other word characters.
_TOKEN_RUN = re.compile(f"([{_CJK_RANGES}]+)|((?:(?![{_CJK_RANGES}])\\w)+)")
# A "size unit" for chunking: one CJK character or one word in any other script.
_SIZE_UNIT = re.compile(f"[{_CJK_RANGES}]|(?:(?![{_CJK_RANGES}])\\w)+")
# Pieces used to hard-split an over-long sentence while keeping its spacing.
_SPLIT_PIECE = re.compile(f"[{_CJK_RANGES}]\\s*|[^\\s{_CJK_RANGES}]+\\s*|\\s+")
# Sentence ends: Latin punctuation followed by space, or CJK full-width punctuation.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|(?<=[。！？；])[”’」』）]*\s*")

MAX_TERM_LENGTH = 64

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


def _stem(word: str) -> str:
    """Fold simple English plurals (an S-stemmer): cheap, predictable, rarely wrong."""
    if len(word) <= 3 or not word.isascii():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        # "boxes" -> "box", "churches" -> "church", but "houses" -> "house".
        if word.endswith(("sses", "xes", "ches", "shes", "zes")):
            return word[:-2]
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Index terms of `text`, in order: English words (stemmed, no stop words) and CJK bigrams."""
    terms: list[str] = []
    normalized = unicodedata.normalize("NFKC", text).lower()
    for match in _TOKEN_RUN.finditer(normalized):
        cjk, word = match.group(1), match.group(2)
        if cjk:
            if len(cjk) == 1:
                terms.append(cjk)
            else:
                terms.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
        elif word:
            word = word.strip("_")
            if not word or word in STOP_WORDS or len(word) > MAX_TERM_LENGTH:
                continue
            terms.append(_stem(word))
    return terms


def term_frequencies(text: str) -> tuple[Counter[str], int]:
    """(term -> count, number of terms) for one chunk."""
    terms = tokenize(text)
    return Counter(terms), len(terms)


def size_units(text: str) -> int:
    """How long `text` is for chunking: words, with each CJK character counting as one."""
    return len(_SIZE_UNIT.findall(text))


def is_mostly_cjk(text: str) -> bool:
    units = _SIZE_UNIT.findall(text)
    return bool(units) and sum(1 for u in units if _CJK_CHAR.fullmatch(u)) * 2 > len(units)


def _sentences(text: str) -> list[tuple[str, str]]:
    """Split into (sentence, separator-after-it) pairs; paragraph breaks become "\\n\\n"."""
    out: list[tuple[str, str]] = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in paragraph.split("\n")]
        lines = [line for line in lines if line]
        for li, line in enumerate(lines):
            parts = [p.strip() for p in _SENTENCE_END.split(line)]
            parts = [p for p in parts if p]
            for pi, part in enumerate(parts):
                if pi < len(parts) - 1:
                    sep = "" if _CJK_CHAR.match(part[-1:]) or _CJK_CHAR.match(parts[pi + 1][:1]) else " "
                elif li < len(lines) - 1:
                    sep = "\n"
                else:
                    sep = "\n\n"
                out.append((part, sep))
    return out


def _hard_split(sentence: str, max_size: int) -> list[str]:
    """Cut a sentence longer than `max_size` units into pieces of at most `max_size` units."""
    pieces: list[str] = []
    current: list[str] = []
    units = 0
    for piece in _SPLIT_PIECE.findall(sentence):
        weight = 1 if _SIZE_UNIT.search(piece) else 0
        if units + weight > max_size and current:
            pieces.append("".join(current).strip())
            current, units = [], 0
        current.append(piece)
        units += weight
    if current:
        pieces.append("".join(current).strip())
    return [p for p in pieces if p]


def chunk_text(text: str, *, target: int = 300, max_size: int = 400, overlap: int = 40) -> list[str]:
    """Split text into windows of about `target` (at most `max_size`) units.

    Windows end on sentence boundaries (preferably paragraph ends once `target`
    is reached) and start with the last sentence(s) of the previous window, up
    to `overlap` units, so a fact straddling a boundary is still found whole.
    Units are words, or characters for CJK text (see size_units).
    """
    units: list[tuple[str, str, int]] = []
    for sentence, sep in _sentences(text):
        size = size_units(sentence)
        if size > max_size:
            # Overlap-sized pieces, so run-on text still gets overlapping windows.
            pieces = _hard_split(sentence, min(max_size, max(overlap, 1)))
            joiner = "" if is_mostly_cjk(sentence) else " "
            for i, piece in enumerate(pieces):
                units.append((piece, sep if i == len(pieces) - 1 else joiner, size_units(piece)))
        elif size:
            units.append((sentence, sep, size))
        elif units:
            # Punctuation-only fragments stay attached to what precedes them.
            prev_text, _, prev_size = units[-1]
            units[-1] = (prev_text + " " + sentence, sep, prev_size)

    chunks: list[str] = []
    window: list[tuple[str, str, int]] = []
    window_size = 0
    fresh = 0  # units in the window that are not overlap from the previous one

    def flush() -> None:
        nonlocal window, window_size, fresh
        if not fresh:
            return
        chunks.append("".join(t + s for t, s, _ in window[:-1]) + window[-1][0])
        carried: list[tuple[str, str, int]] = []
        carried_size = 0
        for item in reversed(window):
            if carried_size + item[2] > overlap:
                break
            carried.insert(0, item)
            carried_size += item[2]
        window, window_size, fresh = carried, carried_size, 0

    for item in units:
        if window_size + item[2] > max_size:
            flush()
            # Drop overlap that would not leave room for the next sentence.
            while window and window_size + item[2] > max_size:
                window_size -= window.pop(0)[2]
        window.append(item)
        window_size += item[2]
        fresh += item[2]
        if window_size >= target and item[1] == "\n\n":
            flush()
    flush()
    return chunks
