"""Tokenizing and chunking for the knowledge base.

Pure functions, no Django: the same tokenizer runs at index time (per chunk) and
at query time, so a query term matches exactly the terms stored for a chunk.
English words are lower-cased, stop words dropped and plurals folded; CJK text
has no spaces between words, so it is indexed as overlapping character bigrams
(the classic approach of Lucene's CJK analyzer), which needs no dictionary.
"""

from __future__ import annotations

from collections import Counter

from research import textre
from research.ir import WORD_NOT_CJK, tokenize
from research.report.sentences import sentence_bounds
from research.scripts import CJK as CJK_RANGES
from research.scripts import is_cjk as _is_cjk

__all__ = ["chunk_text", "is_mostly_cjk", "size_units", "term_frequencies", "tokenize"]

# A "size unit" for chunking: one CJK character or one word in any other script.
_SIZE_UNIT = textre.compile(f"[{CJK_RANGES}]|{WORD_NOT_CJK}+")
# Runs of CJK characters (group 1, one unit each) or one word: a match per run, not per character.
_UNIT_RUN = textre.compile(f"([{CJK_RANGES}]+)|{WORD_NOT_CJK}+")
# Pieces used to hard-split an over-long sentence while keeping its spacing; a CJK run (group 1, its
# blanks in group 2) is cut by _hard_split itself.
_SPLIT_PIECE = textre.compile(f"([{CJK_RANGES}]+)(\\s*)|([^\\s{CJK_RANGES}]+\\s*|\\s+)")
def _split_sentences(line: str) -> list[str]:
    """The report's own sentence rule (research.report.sentences), so a chunk never ends mid-sentence
    where a report sentence would not."""
    return [line[start:end] for start, end in sentence_bounds(line, footnotes=True)]

def term_frequencies(text: str) -> tuple[Counter[str], int]:
    """(term -> count, number of terms) for one chunk."""
    terms = tokenize(text)
    return Counter(terms), len(terms)


def _unit_counts(text: str) -> tuple[int, int]:
    """(CJK characters, other words) in `text`."""
    cjk = words = 0
    for run in _UNIT_RUN.findall(text):
        if run:
            cjk += len(run)
        else:
            words += 1
    return cjk, words


def size_units(text: str) -> int:
    """How long `text` is for chunking: words, with each CJK character counting as one."""
    return sum(_unit_counts(text))


def is_mostly_cjk(text: str) -> bool:
    cjk, words = _unit_counts(text)
    return cjk * 2 > cjk + words


def _sentences(text: str) -> list[tuple[str, str]]:
    """Split into (sentence, separator-after-it) pairs; paragraph breaks become "\\n\\n"."""
    out: list[tuple[str, str]] = []
    for paragraph in textre.split(r"\n\s*\n", text):
        lines = [line.strip() for line in paragraph.split("\n")]
        lines = [line for line in lines if line]
        for li, line in enumerate(lines):
            parts = [p.strip() for p in _split_sentences(line)]
            parts = [p for p in parts if p]
            for pi, part in enumerate(parts):
                if pi < len(parts) - 1:
                    sep = "" if _is_cjk(part[-1:]) or _is_cjk(parts[pi + 1][:1]) else " "
                elif li < len(lines) - 1:
                    sep = "\n"
                else:
                    sep = "\n\n"
                out.append((part, sep))
    return out


def _word_runs(piece: str) -> int:
    """size_units of a piece without CJK characters, counted in Python (a regex call per word costs more)."""
    runs, inside = 0, False
    for c in piece:
        word = c.isalnum() or c == "_"
        runs += word and not inside
        inside = word
    return runs


def _hard_split(sentence: str, max_size: int) -> list[tuple[str, int]]:
    """Cut a sentence longer than `max_size` units into pieces of at most `max_size` units: (piece, its size)."""
    pieces: list[tuple[str, int]] = []
    current: list[str] = []
    units = size = 0  # units: what the cut counts (a word is one); size: size_units of the piece
    for run, blanks, piece in _SPLIT_PIECE.findall(sentence):
        if run:  # one unit per character, cut where the piece is full
            at = 0
            while at < len(run):
                if units + 1 > max_size and current:
                    pieces.append(("".join(current).strip(), size))
                    current, units, size = [], 0, 0
                take = max(1, min(len(run) - at, max_size - units))
                current.append(run[at : at + take])
                units += take
                size += take
                at += take
            current.append(blanks)
            continue
        # A word counts if it has a letter, digit or "_" (\w; the piece holds no CJK character).
        runs = _word_runs(piece)
        weight = 1 if runs else 0
        if units + weight > max_size and current:
            pieces.append(("".join(current).strip(), size))
            current, units, size = [], 0, 0
        current.append(piece)
        units += weight
        size += runs
    if current:
        pieces.append(("".join(current).strip(), size))
    return [(p, n) for p, n in pieces if p]


def chunk_text(text: str, *, target: int = 300, max_size: int = 400, overlap: int = 40) -> list[str]:
    """Split text into windows of about `target` (at most `max_size`) units.

    Windows end on sentence boundaries (preferably paragraph ends once `target`
    is reached) and start with the last sentence(s) of the previous window, up
    to `overlap` units, so a fact straddling a boundary is still found whole.
    Units are words, or characters for CJK text (see size_units).
    """
    units: list[tuple[str, str, int]] = []
    for sentence, sep in _sentences(text):
        cjk, words = _unit_counts(sentence)
        size = cjk + words
        if size > max_size:
            # Overlap-sized pieces, so run-on text still gets overlapping windows.
            pieces = _hard_split(sentence, min(max_size, max(overlap, 1)))
            joiner = "" if cjk * 2 > size else " "  # is_mostly_cjk(sentence)
            for i, (piece, piece_size) in enumerate(pieces):
                units.append((piece, sep if i == len(pieces) - 1 else joiner, piece_size))
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
