"""Reading eval pages the way the eval reads reports: shared by the tests of the written-for-purpose
splits (unseen, blind and the dev additions): their checks in one place, none of which may import the engine
or bench/eval/metrics.py."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from bench.eval.corpus import PAGES_DIR, Page, load_pages, search


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


def questions_in(file: Path) -> list[dict[str, Any]]:
    return json.loads(file.read_text(encoding="utf-8"))["questions"]


def questions_besides(file: Path) -> list[dict[str, Any]]:
    """Every other questions*.json's questions: the other splits a written-for-purpose split must stay apart from."""
    return [q for f in sorted(file.parent.glob("questions*.json")) if f != file for q in questions_in(f)]


def pages_of_files(folder: Path, prefix: str) -> list[Page]:
    """The pages of bench/eval/pages/<prefix>*.txt alone (load_pages reads a whole directory)."""
    for file in PAGES_DIR.glob(f"{prefix}*.txt"):
        (folder / file.name).write_text(file.read_text(encoding="utf-8"), encoding="utf-8")
    return load_pages(folder)


def assert_facts_attainable(pages: dict[str, Page], questions: list[dict[str, Any]]) -> None:
    """Every fact is stated in one sentence of one of its pages (all of them the question's), and in no
    sentence of a distractor."""
    for q in questions:
        for fact in q["facts"]:
            assert set(fact["pages"]) <= set(q["pages"]), (q["id"], fact["fact"])
            assert fact["all"] and all(group for group in fact["all"]), (q["id"], fact["fact"])
            assert any(states(fact, s) for name in fact["pages"] for s in sentences(pages[name])), (
                q["id"], fact["fact"])
            for name in q["distractors"]:
                assert not any(states(fact, s) for s in sentences(pages[name])), (q["id"], fact["fact"], name)


def top_hits(pages: dict[str, Page], query: str, limit: int = 8) -> list[str]:
    return names(search(list(pages.values()), query, "http://x", limit=limit))


def assert_searches_find_them(pages: dict[str, Page], questions: list[dict[str, Any]]) -> None:
    """A search for each question ranks its near misses and relevant pages in the top 8, one relevant page
    past the top 4 (reading only the first four misses part of the answer)."""
    for q in questions:
        top = top_hits(pages, q["question"])
        assert len(top) == 8
        assert set(q["near_miss"]) <= set(top), (q["id"], top)
        assert set(q["pages"]) <= set(top), (q["id"], top)
        assert any(top.index(name) >= 4 for name in q["pages"]), (q["id"], top)


def assert_apart(pages: dict[str, Page], mine: list[dict[str, Any]], others: list[dict[str, Any]],
                 own_files: list[Page], prefix: str) -> None:
    """The split shares no page, question or id with the others; its pages are the `prefix` pages, all in
    its own files; no answer of its is among the first results for another question, nor theirs for its."""
    theirs = {n for q in others for key in ("pages", "distractors", "near_miss") for n in q.get(key, ())}
    ours = {n for q in mine for n in q["pages"] + q["distractors"] + q["near_miss"]}
    assert not theirs & ours and not {n for n in theirs if n.startswith(prefix)}
    assert not {q["id"] for q in others} & {q["id"] for q in mine}
    asked = {" ".join(q["question"].casefold().split()) for q in others}
    assert not asked & {" ".join(q["question"].casefold().split()) for q in mine}
    assert {n for n in pages if n.startswith(prefix)} == ours, f"every {prefix} page belongs to a question"
    assert {p.name for p in own_files} == ours  # ...and lives in the split's own files, which hold nothing else
    relevant = {n for q in mine for n in q["pages"]}
    for q in others:
        assert not set(top_hits(pages, q["question"], limit=4)) & relevant, q["id"]
    their_relevant = {n for q in others for n in q["pages"]}
    for q in mine:
        assert not set(top_hits(pages, q["question"])) & their_relevant, q["id"]
