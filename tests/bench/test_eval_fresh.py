"""The `unseen` eval split (bench/eval/questions_fresh.json, pages in bench/eval/pages/fresh-*.txt) is what
it claims to be: twelve questions written the way users ask, each with relevant pages that state its key
facts, distractors on the same subject without them, and near-miss pages on a neighbouring subject that a
search for the question finds; one relevant page a naive search ranks past the top 4; nothing shared with
the other splits.

It reads only the corpus (bench/eval/corpus.py) and the JSON: the split was written without the engine's
code, and its test keeps off it too (so no import of bench/eval/metrics.py, which pulls in the report check).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bench.eval.corpus import PAGES_DIR, Page, load_pages, search
from tests.support.eval_pages import names as _names
from tests.support.eval_pages import sentences as _sentences
from tests.support.eval_pages import states as _states

EVAL_DIR = PAGES_DIR.parent
FRESH = EVAL_DIR / "questions_fresh.json"
KEYS = {"id", "split", "locale", "question", "pages", "distractors", "near_miss", "facts"}


@pytest.fixture(scope="module")
def pages() -> dict[str, Page]:
    return {p.name: p for p in load_pages()}  # raises on a page name used twice across all files


@pytest.fixture(scope="module")
def fresh() -> list[dict[str, Any]]:
    return json.loads(FRESH.read_text(encoding="utf-8"))["questions"]


@pytest.fixture(scope="module")
def fresh_files(tmp_path_factory: pytest.TempPathFactory) -> list[Page]:
    """The pages of bench/eval/pages/fresh-*.txt alone (load_pages reads a whole directory)."""
    tmp = tmp_path_factory.mktemp("fresh-pages")
    for file in PAGES_DIR.glob("fresh-*.txt"):
        (tmp / file.name).write_text(file.read_text(encoding="utf-8"), encoding="utf-8")
    return load_pages(tmp)


@pytest.fixture(scope="module")
def others() -> list[dict[str, Any]]:
    return [q for f in sorted(EVAL_DIR.glob("questions*.json")) if f != FRESH
            for q in json.loads(f.read_text(encoding="utf-8"))["questions"]]


def test_the_unseen_split_has_twelve_questions_with_pages_distractors_and_near_misses(pages, fresh):
    data = json.loads(FRESH.read_text(encoding="utf-8"))
    assert set(data) == {"about", "questions"} and "unseen" in data["about"]
    assert len(fresh) == 12 and len({q["id"] for q in fresh}) == 12
    assert sorted(q["locale"] for q in fresh) == ["en-US"] * 6 + ["zh-CN"] * 6
    for q in fresh:
        assert set(q) == KEYS and q["split"] == "unseen", q["id"]
        assert 2 <= len(q["pages"]) <= 3 and len(q["distractors"]) == 2 and 2 <= len(q["near_miss"]) <= 3, q["id"]
        named = q["pages"] + q["distractors"] + q["near_miss"]
        assert len(set(named)) == len(named), q["id"]
        for name in named:
            assert name.startswith("fresh-") and name in pages, (q["id"], name)
            assert pages[name].lang == q["locale"][:2], (q["id"], name)
        for name in q["pages"]:
            assert 5 <= len(pages[name].paragraphs) <= 7, (q["id"], name)
        assert 5 <= len(q["facts"]) <= 8, q["id"]
        # Facts are spread: every relevant page states at least one.
        assert {n for f in q["facts"] for n in f["pages"]} == set(q["pages"]), q["id"]


def test_every_fact_is_attainable_on_its_page_and_absent_from_the_distractors(pages, fresh):
    for q in fresh:
        for fact in q["facts"]:
            assert set(fact["pages"]) <= set(q["pages"]), (q["id"], fact["fact"])
            assert all(group for group in fact["all"]) and fact["all"], (q["id"], fact["fact"])
            assert any(_states(fact, s) for name in fact["pages"] for s in _sentences(pages[name])), (
                q["id"], fact["fact"])
            for name in q["distractors"]:
                assert not any(_states(fact, s) for s in _sentences(pages[name])), (q["id"], fact["fact"], name)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_past_the_top_four(pages, fresh):
    corpus = list(pages.values())
    for q in fresh:
        top = _names(search(corpus, q["question"], "http://x"))
        assert len(top) == 8
        assert set(q["near_miss"]) <= set(top), (q["id"], top)
        assert set(q["pages"]) <= set(top), (q["id"], top)
        # Reading only the top 4 misses part of the answer.
        assert any(top.index(name) >= 4 for name in q["pages"]), (q["id"], top)


def test_the_unseen_split_shares_no_page_and_no_topic_with_the_other_splits(pages, fresh, others, fresh_files):
    assert others and all(q["split"] != "unseen" for q in others)
    theirs = {n for q in others for key in ("pages", "distractors", "near_miss") for n in q.get(key, ())}
    mine = {n for q in fresh for n in q["pages"] + q["distractors"] + q["near_miss"]}
    assert not theirs & mine and not {n for n in theirs if n.startswith("fresh-")}
    assert {n for n in pages if n.startswith("fresh-")} == mine, "every fresh- page belongs to a question"
    # ...and lives in the split's own files, which hold nothing else.
    assert {p.name for p in fresh_files} == mine
    corpus = list(pages.values())
    relevant = {n for q in fresh for n in q["pages"]}
    for q in others:
        # No answer of ours is among the first results for another split's question, nor theirs for ours.
        assert not set(_names(search(corpus, q["question"], "http://x", limit=4))) & relevant, q["id"]
    their_relevant = {n for q in others for n in q["pages"]}
    for q in fresh:
        assert not set(_names(search(corpus, q["question"], "http://x"))) & their_relevant, q["id"]


def test_the_pages_carry_the_junk_real_pages_carry(pages, fresh):
    relevant = {n for q in fresh for n in q["pages"]}
    facts = [(f, n) for q in fresh for f in q["facts"] for n in f["pages"]]
    # Chinese pages with title, byline, date and reading time glued to the first paragraph, some of
    # them relevant pages whose first sentence states a key fact.
    glued = [p for p in pages.values() if p.name.startswith("fresh-") and p.lang == "zh"
             and all(mark in p.paragraphs[0] for mark in ("作者：", "更新于", "阅读约"))]
    assert len(glued) >= 4
    assert any(_states(f, _sentences(pages[n])[0]) for f, n in facts if pages[n] in glued)
    # An English project README: vim modeline, badges and a sponsor blurb around the install command.
    readme = pages["fresh-dramatiq-readme"]
    assert readme.name in relevant and "vim:" in readme.paragraphs[0]
    assert "[build: passing]" in readme.text and "sponsor" in readme.text.casefold()
    install = next(f for f, n in facts if n == readme.name and "pip install" in f["all"][0])
    assert any(_states(install, s) for s in _sentences(readme))
    # English pages carry Chinese search terms only where people would search in Chinese.
    assert any(re.search(r"[\u4e00-\u9fff]", p.keywords) for p in pages.values()
               if p.name.startswith("fresh-") and p.lang == "en")
    assert not any(re.search(r"[\u4e00-\u9fff]", pages[n].keywords) for n in
                   ("fresh-dramatiq-readme", "fresh-dramatiq-guide", "fresh-retries-backoff"))
