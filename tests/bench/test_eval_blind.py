"""The `blind` eval split (bench/eval/questions_blind.json, pages in bench/eval/pages/blind-*.txt) is what it
claims to be: twelve questions written the way users ask, each with relevant pages that state its key facts,
distractors on the same subject without them, and near-miss pages on a neighbouring subject that a search for
the question finds; one relevant page a naive search ranks past the top 4; one Chinese question answered by
English pages; nothing shared with the other splits.

Like the unseen split's test, it reads only the corpus (bench/eval/corpus.py) and the JSON: the split was
written without the engine's code, and its test keeps off it too (no import of bench/eval/metrics.py).
"""

from __future__ import annotations

import re
from itertools import groupby
from typing import Any

from bench.eval.corpus import PAGES_DIR, Page
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
    sentences,
    split_fixtures,
    stated,
    stated_first,
    states,
)

EVAL_DIR = PAGES_DIR.parent
BLIND = EVAL_DIR / "questions_blind.json"
HAN = re.compile(r"[\u4e00-\u9fff]")

pages, blind, blind_files, others = split_fixtures(BLIND, "blind-")


def _over_english(q: dict[str, Any], pages: dict[str, Page]) -> bool:
    """The Chinese question whose relevant pages are English (a real search finds them through the
    Chinese words on their `keywords:` line)."""
    return q["locale"] == "zh-CN" and all(pages[n].lang == "en" for n in q["pages"])


def test_the_blind_split_has_twelve_questions_with_pages_distractors_and_near_misses(pages, blind):
    assert_question_shapes(pages, blind, BLIND, about="blind", split="blind", prefix="blind-", id_prefix="bl-")
    assert len(blind) == 12 and len({q["id"] for q in blind}) == 12
    assert sorted(q["locale"] for q in blind) == ["en-US"] * 6 + ["zh-CN"] * 6
    assert [q["id"] for q in blind if _over_english(q, pages)] == ["bl-sousvide-zh"]
    for q in blind:
        lang = q["locale"][:2]
        if _over_english(q, pages):
            assert all(pages[n].lang == "en" for n in q["pages"] + q["distractors"]), q["id"]
            assert all(HAN.search(pages[n].keywords) for n in q["pages"]), q["id"]
        else:
            assert all(pages[n].lang == lang for n in named(q)), q["id"]
        # Near misses in the question's language (two at least, as every split's are), tempting with what the
        # question asks for: figures, or for the how-to another tool's install command.
        assert sum(pages[n].lang == lang for n in q["near_miss"]) >= 2, q["id"]
        for name in q["near_miss"]:
            if q["id"] == "bl-precommit-en":
                assert "install" in pages[name].text and "pre-commit" in pages[name].text, (q["id"], name)
            else:
                assert sum(digits for digits, _ in groupby(pages[name].text, str.isdigit)) >= 3, (q["id"], name)


def test_the_questions_are_asked_the_way_users_ask(blind):
    asked = {q["id"]: q["question"] for q in blind}
    # A coordinated phrase that is one question, a list of attributes, a comparison, a how-to, a yes/no
    # question, two clauses; in Chinese two clauses and coordinated phrases.
    assert "in 2023 and 2024?" in asked["bl-atlantic-en"]
    assert "costs, risks and benefits" in asked["bl-congestion-en"]
    assert "compare with" in asked["bl-vinyl-en"]
    assert asked["bl-precommit-en"].startswith("How do I")
    assert asked["bl-searing-en"].startswith("Does ")
    assert ", and why" in asked["bl-freight-en"]
    for qid in ("bl-waterlogging-zh", "bl-robots-zh"):
        first, _, second = asked[qid].rstrip("？").partition("，")
        assert first and second and "？" not in first, qid
    assert "市场规模和用户规模" in asked["bl-shortdrama-zh"] and "2023年和2024年" in asked["bl-parcels-zh"]
    assert "子女教育和赡养老人" in asked["bl-iit-zh"]


def test_every_fact_is_attainable_on_its_page_and_absent_from_the_distractors(pages, blind):
    assert_facts_attainable(pages, blind)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_past_the_top_four(pages, blind):
    assert_searches_find_them(pages, blind)


def test_the_blind_split_shares_no_page_and_no_topic_with_the_other_splits(pages, blind, others, blind_files):
    assert others and all(q["split"] != "blind" for q in others)
    assert_apart(pages, blind, others, blind_files, "blind-")


def test_the_pages_carry_the_junk_real_pages_carry(pages, blind):
    relevant = relevant_pages(blind)
    facts = facts_on_pages(blind)
    # Chinese pages with title, byline, date and reading time glued to the first paragraph, some of
    # them relevant pages whose first sentence states a key fact.
    glued = glued_headers(pages, "blind-", title_first=False)
    assert len(glued) >= 4
    assert sum(p.name in relevant for p in glued) >= 4
    assert stated_first(pages, facts, glued)
    # A project README: vim modeline, badges and a sponsor blurb around the install command.
    readme = pages["blind-precommit-readme"]
    assert_readme_junk(readme, relevant, in_place=False)
    install = next(f for f, n in facts if n == readme.name and "pip install pre-commit" in f["all"][0])
    assert stated(install, readme)
    # The answer is not in the README's opening: the install command comes after the badges and the sponsors.
    assert not any(states(install, s) for par in readme.paragraphs[:4] for s in sentences(
        Page(readme.name, readme.title, readme.lang, "", (par,))))
    # English pages carry Chinese search terms only where people would search in Chinese.
    with_han = {p.name for p in pages.values() if p.name.startswith("blind-") and p.lang == "en"
                and HAN.search(p.keywords)}
    sousvide = next(q for q in blind if q["id"] == "bl-sousvide-zh")
    assert set(sousvide["pages"]) <= with_han <= set(named(sousvide))
