"""The `unseen` eval split (bench/eval/questions_fresh.json, pages in bench/eval/pages/fresh-*.txt) is what
it claims to be: twelve questions written the way users ask, each with relevant pages that state its key
facts, distractors on the same subject without them, and near-miss pages on a neighbouring subject that a
search for the question finds; one relevant page a naive search ranks past the top 4; nothing shared with
the other splits.

It reads only the corpus (bench/eval/corpus.py) and the JSON: the split was written without the engine's
code, and its test keeps off it too (so no import of bench/eval/metrics.py, which pulls in the report check).
"""

from __future__ import annotations

import re

from bench.eval.corpus import PAGES_DIR
from tests.support.eval_pages import (
    assert_apart,
    assert_facts_attainable,
    assert_question_shapes,
    assert_readme_junk,
    assert_searches_find_them,
    facts_on_pages,
    glued_headers,
    named,
    relevant_pages,
    split_fixtures,
    stated,
    stated_first,
)

EVAL_DIR = PAGES_DIR.parent
FRESH = EVAL_DIR / "questions_fresh.json"

pages, fresh, fresh_files, others = split_fixtures(FRESH, "fresh-")


def test_the_unseen_split_has_twelve_questions_with_pages_distractors_and_near_misses(pages, fresh):
    assert_question_shapes(pages, fresh, FRESH, about="unseen", split="unseen", prefix="fresh-")
    assert len(fresh) == 12 and len({q["id"] for q in fresh}) == 12
    assert sorted(q["locale"] for q in fresh) == ["en-US"] * 6 + ["zh-CN"] * 6
    for q in fresh:
        for name in named(q):
            assert pages[name].lang == q["locale"][:2], (q["id"], name)


def test_every_fact_is_attainable_on_its_page_and_absent_from_the_distractors(pages, fresh):
    assert_facts_attainable(pages, fresh)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_past_the_top_four(pages, fresh):
    assert_searches_find_them(pages, fresh)


def test_the_unseen_split_shares_no_page_and_no_topic_with_the_other_splits(pages, fresh, others, fresh_files):
    assert others and all(q["split"] != "unseen" for q in others)
    assert_apart(pages, fresh, others, fresh_files, "fresh-")


def test_the_pages_carry_the_junk_real_pages_carry(pages, fresh):
    relevant = relevant_pages(fresh)
    facts = facts_on_pages(fresh)
    # Chinese pages with title, byline, date and reading time glued to the first paragraph, some of
    # them relevant pages whose first sentence states a key fact.
    glued = glued_headers(pages, "fresh-", title_first=False)
    assert len(glued) >= 4
    assert stated_first(pages, facts, glued)
    # An English project README: vim modeline, badges and a sponsor blurb around the install command.
    readme = pages["fresh-dramatiq-readme"]
    assert_readme_junk(readme, relevant, in_place=False)
    install = next(f for f, n in facts if n == readme.name and "pip install" in f["all"][0])
    assert stated(install, readme)
    # English pages carry Chinese search terms only where people would search in Chinese.
    assert any(re.search(r"[\u4e00-\u9fff]", p.keywords) for p in pages.values()
               if p.name.startswith("fresh-") and p.lang == "en")
    assert not any(re.search(r"[\u4e00-\u9fff]", pages[n].keywords) for n in
                   ("fresh-dramatiq-readme", "fresh-dramatiq-guide", "fresh-retries-backoff"))
