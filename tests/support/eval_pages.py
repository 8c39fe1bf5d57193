"""Reading eval pages the way the eval reads reports: shared by the tests of the written-for-purpose
splits (unseen, blind, the dev additions and the third dev set in English and Chinese): their fixtures and
their checks in one place, each check taking the split's questions and its own tables as arguments. None
of it may import the engine or bench/eval/metrics.py."""

from __future__ import annotations

import json
import re
import unicodedata
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from bench.eval.corpus import PAGES_DIR, Page, load_pages, search

# The keys every question of every split has.
QUESTION_KEYS = {"id", "split", "locale", "question", "pages", "distractors", "near_miss", "facts"}


def fold(text: str) -> str:
    # As the eval folds report sentences: NFKC (full-width ％ and ： become ASCII), case, spaces.
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def sentences(page: Page) -> list[str]:
    # A sentence ends at . ! ? followed by a space, or at a Chinese full stop, ！ or ？ (split before
    # folding, which turns ！ and ？ into ASCII).
    return [fold(s) for par in page.paragraphs for s in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", par) if s.strip()]


def states(fact: dict[str, Any], sentence: str) -> bool:
    return all(any(fold(word) in sentence for word in group) for group in fact["all"])


def stated(fact: dict[str, Any], page: Page) -> bool:
    """The fact is stated in one sentence of the page."""
    return any(states(fact, s) for s in sentences(page))


def has(text: str, words: list[str]) -> bool:
    return any(fold(w) in fold(text) for w in words)


def named(q: dict[str, Any]) -> list[str]:
    """Every page a question names: relevant pages, distractors, near misses."""
    return q["pages"] + q["distractors"] + q["near_miss"]


def relevant_pages(questions: list[dict[str, Any]]) -> set[str]:
    return {n for q in questions for n in q["pages"]}


def facts_on_pages(questions: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """(fact, page) for every page each fact is on."""
    return [(f, n) for q in questions for f in q["facts"] for n in f["pages"]]


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


def split_fixtures(questions: Path, prefix: str) -> tuple[Any, Any, Any, Any]:
    """A split's module-scoped fixtures, for its test module to bind as `pages, mine, own_files, others`
    (pytest names a fixture after the module attribute it is bound to): the whole corpus by page name,
    the split's questions, the pages of its own files (named `prefix`*.txt), every other split's questions."""

    @pytest.fixture(scope="module")
    def pages() -> dict[str, Page]:
        return {p.name: p for p in load_pages()}  # raises on a page name used twice across all files

    @pytest.fixture(scope="module")
    def mine() -> list[dict[str, Any]]:
        return questions_in(questions)

    @pytest.fixture(scope="module")
    def own_files(tmp_path_factory: pytest.TempPathFactory) -> list[Page]:
        return pages_of_files(tmp_path_factory.mktemp(f"{prefix}pages"), prefix)

    @pytest.fixture(scope="module")
    def others() -> list[dict[str, Any]]:
        return questions_besides(questions)

    return pages, mine, own_files, others


def assert_question_shapes(pages: dict[str, Page], questions: list[dict[str, Any]], file: Path, *, about: str,
                           split: str, prefix: str, id_prefix: str = "",
                           near_misses: tuple[int, int] = (2, 3)) -> None:
    """The questions file says what it is for (`about` in its "about" line) and holds nothing else; every
    question has all the keys, the split's name, an id starting `id_prefix`, 2 or 3 relevant pages, 2
    distractors and `near_misses` (least, most) near misses, all of them distinct corpus pages whose names
    start `prefix`; relevant pages of 5 to 7 paragraphs; 5 to 8 facts, spread over the relevant pages."""
    data = json.loads(file.read_text(encoding="utf-8"))
    assert set(data) == {"about", "questions"} and about in data["about"]
    least, most = near_misses
    for q in questions:
        assert set(q) == QUESTION_KEYS and q["split"] == split and q["id"].startswith(id_prefix), q["id"]
        assert 2 <= len(q["pages"]) <= 3 and len(q["distractors"]) == 2, q["id"]
        assert least <= len(q["near_miss"]) <= most, q["id"]
        assert len(set(named(q))) == len(named(q)), q["id"]
        for name in named(q):
            assert name.startswith(prefix) and name in pages, (q["id"], name)
        for name in q["pages"]:
            assert 5 <= len(pages[name].paragraphs) <= 7, (q["id"], name)
        assert 5 <= len(q["facts"]) <= 8, q["id"]
        # Facts are spread: every relevant page states at least one.
        assert {n for f in q["facts"] for n in f["pages"]} == set(q["pages"]), q["id"]


def assert_facts_attainable(pages: dict[str, Page], questions: list[dict[str, Any]]) -> None:
    """Every fact is stated in one sentence of one of its pages (all of them the question's), and in no
    sentence of a distractor."""
    for q in questions:
        for fact in q["facts"]:
            assert set(fact["pages"]) <= set(q["pages"]), (q["id"], fact["fact"])
            assert fact["all"] and all(group for group in fact["all"]), (q["id"], fact["fact"])
            assert any(stated(fact, pages[name]) for name in fact["pages"]), (q["id"], fact["fact"])
            for name in q["distractors"]:
                assert not stated(fact, pages[name]), (q["id"], fact["fact"], name)


def assert_near_misses_state_no_fact(pages: dict[str, Page], questions: list[dict[str, Any]]) -> None:
    """The near misses tempt with figures of the same kind, but none of them states a key fact in one
    sentence."""
    for q in questions:
        for fact in q["facts"]:
            for name in q["near_miss"]:
                assert not stated(fact, pages[name]), (q["id"], fact["fact"], name)


def top_hits(pages: dict[str, Page], query: str, limit: int = 8) -> list[str]:
    return names(search(list(pages.values()), query, "http://x", limit=limit))


def assert_searches_find_them(pages: dict[str, Page], questions: list[dict[str, Any]],
                              near_miss_within: int = 8) -> list[list[str]]:
    """A search for each question ranks its near misses in the top `near_miss_within` and its relevant pages
    in the top 8, one relevant page past the top 4 (reading only the first four misses part of the answer).
    Returns each question's top 8, in the questions' order, for a split's own checks to reuse (searching is
    the slow part)."""
    tops: list[list[str]] = []
    for q in questions:
        top = top_hits(pages, q["question"])
        tops.append(top)
        assert len(top) == 8
        assert set(q["near_miss"]) <= set(top[:near_miss_within]), (q["id"], top)
        assert set(q["pages"]) <= set(top), (q["id"], top)
        assert any(top.index(name) >= 4 for name in q["pages"]), (q["id"], top)
    return tops


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


def assert_subject_named_differently(
        pages: dict[str, Page], questions: list[dict[str, Any]], subject: dict[str, tuple[list[str], list[str]]],
        titles: dict[str, list[str]], qualified: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every relevant page names its question's subject, as the question does (`subject`: id -> the
    question's words, the other names), or another way. `titles` (kind -> pages) sorts relevant pages by
    how their title names it without the question's words: a synonym in the title, or the subject in the
    body only; `qualified` (page -> qualifier) are titles with the subject plus a qualifier the question
    leaves out. Returns relevant page -> its question."""
    by_page = {n: q for q in questions for n in q["pages"]}
    assert set(subject) == {q["id"] for q in questions}
    for q in questions:
        asked, other_names = subject[q["id"]]
        assert has(q["question"], asked), q["id"]
        for name in q["pages"]:
            page = pages[name]
            # Every relevant page is about the subject: it names it, one way or another.
            assert has(f"{page.title} {page.text}", asked + other_names), (q["id"], name)
    for kind, kind_pages in titles.items():
        assert len(kind_pages) >= 3 and set(kind_pages) <= set(by_page), kind
        for name in kind_pages:
            asked, other_names = subject[by_page[name]["id"]]
            title, body = pages[name].title, pages[name].text
            assert not has(title, asked), (kind, name)
            if kind == "synonym":
                assert has(title, other_names), name
            else:  # the subject is in the body
                assert has(body, asked + other_names), (kind, name)
    for name, qualifier in qualified.items():
        asked, other_names = subject[by_page[name]["id"]]
        assert has(pages[name].title, asked + other_names) and has(pages[name].title, [qualifier]), name
        # The question itself does not ask about that place, population, period or case.
        assert not has(by_page[name]["question"], [qualifier]), name
    return by_page


def assert_near_misses_about_another_subject(pages: dict[str, Page], questions: list[dict[str, Any]],
                                             near: dict[str, tuple[str, str]], kinds: set[str]) -> None:
    """`near` (near miss -> its kind, the word that makes it another subject) covers every near miss and
    every one of `kinds`; the word is on the near miss, on none of its question's relevant pages and not
    in the question; the near miss tempts with figures (three numbers at least)."""
    by_near = {n: q for q in questions for n in q["near_miss"]}
    assert set(near) == set(by_near)
    assert {kind for kind, _ in near.values()} == kinds
    for name, (_kind, marker) in near.items():
        q, page = by_near[name], pages[name]
        assert has(f"{page.title} {page.text}", [marker]), (name, marker)
        assert not any(has(f"{pages[n].title} {pages[n].text}", [marker]) for n in q["pages"]), (name, marker)
        assert not has(q["question"], [marker]), (name, marker)
        assert sum(digits for digits, _ in groupby(page.text, str.isdigit)) >= 3, name


def glued_headers(pages: dict[str, Page], prefix: str, *, title_first: bool) -> list[Page]:
    """The split's Chinese pages with a byline, date and reading time glued to the first paragraph (which
    starts with the page's title too, where `title_first`), as scraped pages come."""
    return [p for p in pages.values() if p.name.startswith(prefix) and p.lang == "zh"
            and (p.paragraphs[0].startswith(p.title) or not title_first)
            and all(mark in p.paragraphs[0] for mark in ("作者：", "更新于", "阅读约"))]


def stated_first(pages: dict[str, Page], facts: list[tuple[dict[str, Any], str]], among: list[Page]) -> set[str]:
    """The pages of `among` whose first sentence, glued to whatever junk, states a key fact on them."""
    return {n for f, n in facts if pages[n] in among and states(f, sentences(pages[n])[0])}


def assert_readme_junk(readme: Page, relevant: set[str], *, in_place: bool) -> None:
    """A relevant project README with a vim modeline glued to its first paragraph, build badges and a
    sponsor blurb: the badges glued to the first paragraph too and the blurb closing the page, where
    `in_place`, else anywhere."""
    assert readme.name in relevant and "vim:" in readme.paragraphs[0]
    assert "[build: passing]" in readme.text and "sponsor" in readme.text.casefold()
    if in_place:
        assert "[build: passing]" in readme.paragraphs[0] and "sponsor" in readme.paragraphs[-1].casefold()
