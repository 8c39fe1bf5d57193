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

from bench.eval.corpus import PAGES_DIR, Page, load_pages
from tests.support.eval_pages import (
    assert_apart,
    assert_facts_attainable,
    assert_searches_find_them,
    pages_of_files,
    questions_besides,
    questions_in,
)
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
    return questions_in(FRESH)


@pytest.fixture(scope="module")
def fresh_files(tmp_path_factory: pytest.TempPathFactory) -> list[Page]:
    return pages_of_files(tmp_path_factory.mktemp("fresh-pages"), "fresh-")


@pytest.fixture(scope="module")
def others() -> list[dict[str, Any]]:
    return questions_besides(FRESH)


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
    assert_facts_attainable(pages, fresh)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_past_the_top_four(pages, fresh):
    assert_searches_find_them(pages, fresh)


def test_the_unseen_split_shares_no_page_and_no_topic_with_the_other_splits(pages, fresh, others, fresh_files):
    assert others and all(q["split"] != "unseen" for q in others)
    assert_apart(pages, fresh, others, fresh_files, "fresh-")


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
