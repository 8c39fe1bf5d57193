"""How report text splits into sentences: the one splitter, English and Chinese.

Two views of the same rule: `split_marked_text` reads a block's plain text (citation markers stood
in by `_SENTINEL`) into `Sentence`s for the derived outputs, and `line_sentences` gives the spans of
the sentences of one Markdown line, for the claim check that rewrites the line in place. Both end a
sentence at `.!?` followed by a blank and no lower-case word, or at `。！？`; both keep closing quotes
and the citation markers written right after the punctuation with the sentence they follow
("… packs. [3]", "…瓶颈。[2]"); both know the same abbreviations ("e.g.", "Dr.", "U.S.").
"""

from __future__ import annotations

from dataclasses import dataclass

from research import scripts, textre
from research.report.citations import TRAILING_CITATION

_SENTINEL = "\ue000"  # stands in for one citation marker while sentences are split
_CJK_TERMINATORS = "。！？"
_TERMINATORS = ".!?" + _CJK_TERMINATORS
_CLOSERS = "\"'”’)）」』】"
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e inc ltd co corp no fig figs al approx est dept gov "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n e.u p.m a.m ph.d".split()
)
_INITIALS = textre.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")
_CJK = textre.compile(f"[{scripts.HAN}]")
_BLANK_RUN = textre.compile(r"\s+")


def _cjk_or(char: str, marks: str) -> bool:
    return bool(char) and (scripts.is_han(char) or char in marks)

_LATIN_WORD = textre.compile(r"[A-Za-z0-9][A-Za-z0-9'’.,%$-]*")
_TERMINATOR = textre.compile(r"[.!?。！？]")
# The claim check's marks, kept with the sentence they follow (research.report.check adds them).
MARKER_EN = " *(unverified)*"
MARKER_ZH = "*（未经核实）*"
MARKERS = (MARKER_EN.strip(), MARKER_ZH)


@dataclass(frozen=True)
class Sentence:
    """One sentence as plain text (markers removed) and the citation numbers that were on it."""

    text: str
    citations: tuple[int, ...] = ()

    def marked(self) -> str:
        """The sentence with its markers back at the end: "Costs fell. [2][3]" / "成本下降。[2]"."""
        if not self.citations:
            return self.text
        marks = "".join(f"[{n}]" for n in self.citations)
        return (
            f"{self.text}{marks}"
            if _CJK.search(self.text[-1:] or "") or self.text.endswith(tuple(_CJK_TERMINATORS))
            else f"{self.text} {marks}"
        )

    @property
    def words(self) -> float:
        return text_words(self.text)


def text_words(text: str) -> float:
    """Length in English-word equivalents: Latin words count 1, Chinese characters 0.6 (≈ 1.7 per word)."""
    return len(_LATIN_WORD.findall(_CJK.sub(" ", text))) + 0.6 * len(_CJK.findall(text))




def _is_abbreviation(text: str, start: int, dot: int) -> bool:
    # Only the last few characters can be an abbreviation: a bounded look back keeps a line of
    # "x.)x.)…" without blanks linear.
    window = max(start, dot - 12)
    word_start = max(text.rfind(" ", window, dot) + 1, window)
    word = text[word_start:dot].lstrip("(\"'“")
    return word.lower() in _ABBREVIATIONS or bool(_INITIALS.fullmatch(word))


def _clean(text: str) -> str:
    text = textre.sub(r"\s+", " ", text.replace(_SENTINEL, " ")).strip()
    # A marker removed before punctuation leaves "world ." behind.
    text = textre.sub(r"\s+([,.;:!?，。；：！？、）)])", r"\1", text)

    def join(m: textre.Match) -> str:  # no blank between Chinese characters (RE2: no lookaround)
        start, end = m.start(), m.end()
        if start and _cjk_or(text[start - 1], "，。；：！？、）") and _cjk_or(text[end : end + 1], "，。；：！？、（"):
            return ""
        return m.group(0)

    return _BLANK_RUN.sub(join, text)


_FOOTNOTE = textre.compile(r"\[[^\[\]\s]{1,12}\]")  # [12], [a]; [note 3] is not one (it has a blank)


def sentence_bounds(text: str, *, footnotes: bool = False) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a block of plain text: the one boundary rule.

    A sentence ends after `.!?` (with closing quotes) followed by a blank and no lower-case word,
    unless the word before the dot is an abbreviation or an initial; or after `。！？`. Citation
    stand-ins (`_SENTINEL`) and, with `footnotes`, `[3]`-style markers right after the punctuation
    belong to the sentence they follow. "3.5" and "e.g.x" are no boundaries; the end of the text is.
    """
    bounds: list[tuple[int, int]] = []
    start, i, n = 0, 0, len(text)
    while i < n:
        if text[i] not in _TERMINATORS:
            i += 1
            continue
        j = i + 1
        while j < n and text[j] in _TERMINATORS:
            j += 1
        while j < n and text[j] in _CLOSERS:
            j += 1
        while footnotes and (m := _FOOTNOTE.match(text, j)) is not None:
            j = m.end()
        # Markers after the final punctuation belong to this sentence.
        k = j
        while k < n and (text[k].isspace() or text[k] == _SENTINEL):
            if text[k] == _SENTINEL:
                j = k + 1
            k += 1
        if any(ch in _CJK_TERMINATORS for ch in text[i:j]):
            boundary = True
        elif k >= n:
            boundary = True
        elif k == j and text[j - 1] != _SENTINEL:
            boundary = False  # "3.5", "e.g.x"
        else:
            boundary = not text[k].islower() and not (
                text[i] == "." and text[i + 1 : i + 2] != "." and _is_abbreviation(text, start, i)
            )
        if boundary:
            bounds.append((start, j))
            start = j
        i = j
    if start < n:
        bounds.append((start, n))
    return bounds


def split_marked_text(text: str, markers: list[tuple[int, ...]]) -> list[Sentence]:
    """Split text holding one `_SENTINEL` per entry of `markers` into sentences with their citations."""
    bounds = sentence_bounds(text)
    sentences: list[Sentence] = []
    used = 0
    for a, b in bounds:
        piece = text[a:b]
        count = piece.count(_SENTINEL)
        numbers: list[int] = []
        for group in markers[used : used + count]:
            numbers.extend(x for x in group if x not in numbers)
        used += count
        clean = _clean(piece)
        if clean and textre.search(r"\w", clean):
            sentences.append(Sentence(clean, tuple(numbers)))
        elif numbers and sentences:  # a stray marker on its own: it cites the sentence before it
            last = sentences[-1]
            merged = last.citations + tuple(x for x in numbers if x not in last.citations)
            sentences[-1] = Sentence(last.text, merged)
    return sentences


def line_sentences(line: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences in one line; trailing citation markers stay with their sentence."""
    spans: list[tuple[int, int]] = []
    start, i, n = 0, 0, len(line)
    while i < n:
        match = _TERMINATOR.search(line, i)
        if match is None:
            break
        j = match.end()
        cjk_stop = match.group(0) in "。！？"
        if not cjk_stop and j < n and (line[j].isdigit() or line[j].isalnum()):
            i = j  # "3.5", "e.g.x"
            continue
        if match.group(0) == "." and _is_abbreviation(line, start, match.start()):
            i = j  # "e.g. The", "Dr. Smith": the same abbreviations as split_marked_text
            continue
        while j < n and line[j] in "\"'”’)）」\x01\x02":  # closers, and the check's marks of a removed link
            j += 1
        while (cite := TRAILING_CITATION.match(line, j)) is not None:
            j = cite.end()
        for marker in (MARKER_EN, *MARKERS):  # the check's mark, with its blank, stays on its sentence
            if line.startswith(marker, j):
                j += len(marker)
                break
        if cjk_stop or j >= n or line[j].isspace():
            if not cjk_stop and j < n and line[j:].lstrip()[:1].islower():
                i = j
                continue
            spans.append((start, j))
            start = j
        i = j
    if start < n and line[start:].strip():
        spans.append((start, n))
    return spans


