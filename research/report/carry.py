"""Does a line a model wrote for the deck or the podcast carry a sentence of the report?

Slides and podcast scripts may be written by the model, but they must say what the report says:
each bullet and each spoken line is matched against the report's own sentences (the one splitter,
research.report.sentences) with the claim check's lexical score (research.report.claims). A line
whose terms and numbers are found in one report sentence carries that sentence, and takes its
citations; any other line is dropped by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from research.report.citations import strip_citations
from research.report.claims import SUPPORTED, plain_text, support_score
from research.report.sentences import Sentence

__all__ = ["carried", "with_citations"]


def carried(text: str, sentences: Sequence[Sentence]) -> Sentence | None:
    """The report sentence that best carries `text` (at least SUPPORTED of its terms and all its numbers)."""
    plain = plain_text(strip_citations(text))
    if not plain.strip():
        return None
    best: tuple[float, Sentence | None] = (0.0, None)
    for sentence in sentences:
        score = support_score(plain, sentence.text)
        if score > best[0]:
            best = (score, sentence)
    return best[1] if best[0] >= SUPPORTED else None


def with_citations(text: str, sentence: Sentence) -> str:
    """`text` with the citation markers of the sentence it carries (its own markers replaced)."""
    return Sentence(strip_citations(text).strip(), sentence.citations).marked()
