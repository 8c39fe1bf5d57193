"""Reading eval pages the way the eval reads reports: shared by the tests of the written-for-purpose
splits (unseen, and any later one), which must not import the engine or bench/eval/metrics.py."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from bench.eval.corpus import Page


def fold(text: str) -> str:
    # As the eval folds report sentences: NFKC (full-width ％ and ： become ASCII), case, spaces.
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def sentences(page: Page) -> list[str]:
    # A sentence ends at . ! ? followed by a space, or at a Chinese full stop, ！ or ？ (split before
    # folding, which turns ！ and ？ into ASCII).
    return [fold(s) for par in page.paragraphs for s in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", par) if s.strip()]


def states(fact: dict[str, Any], sentence: str) -> bool:
    return all(any(fold(word) in sentence for word in group) for group in fact["all"])


def names(hits: list[dict[str, str]]) -> list[str]:
    return [h["url"].rsplit("/", 1)[1].removesuffix(".html") for h in hits]
