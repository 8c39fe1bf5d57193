"""The third set of English dev questions (bench/eval/questions_dev3_en.json, pages in
bench/eval/pages/dev3-en-*.txt), built like the dev additions (tests/bench/test_eval_devplus.py) to tune how an
engine judges "is this page about the question's subject": relevant pages that name the subject differently
from the question (a synonym, abbreviation or technical name, a broader title, a related aspect with the
subject in the body, the subject plus a qualifier), and near-miss pages of six kinds (another kind of the same
thing, another place, period or population, the same subject in another setting, the same words about another
thing) that a search for the question ranks near the top.

It reads only the corpus (bench/eval/corpus.py) and the JSON: the questions were written without the engine's
code, and the test keeps off it too.
"""

from __future__ import annotations

import json
from itertools import groupby
from typing import Any

import pytest

from bench.eval.corpus import PAGES_DIR, Page, load_pages
from tests.support.eval_pages import (
    assert_apart,
    assert_facts_attainable,
    assert_searches_find_them,
    fold,
    pages_of_files,
    questions_besides,
    questions_in,
    top_hits,
)
from tests.support.eval_pages import sentences as _sentences
from tests.support.eval_pages import states as _states

EVAL_DIR = PAGES_DIR.parent
DEV3_EN = EVAL_DIR / "questions_dev3_en.json"
PREFIX = "dev3-en-"
KEYS = {"id", "split", "locale", "question", "pages", "distractors", "near_miss", "facts"}

# The subject as each question names it, and the other names its relevant pages use for it.
SUBJECT: dict[str, tuple[list[str], list[str]]] = {
    "d3-ripgrep-en": (["ripgrep"], ["rg(1)", "rg:", "rg -t", "rg -g"]),
    "d3-lyme-en": (["lyme disease"], ["borrelia burgdorferi", "erythema migrans", "tick-borne"]),
    "d3-bnpl-en": (["buy now, pay later"], ["bnpl", "pay-in-four", "pay later", "pay-later", "checkout credit"]),
    "d3-monarch-en": (["monarch butterfly"], ["danaus plexippus", "monarchs", "monarch caterpillars",
                                              "eastern population"]),
    "d3-49-euro-ticket-en": (["49-euro ticket"], ["deutschlandticket", "d-ticket", "flat-rate",
                                                  "public transport pass"]),
    "d3-melatonin-en": (["jet lag"], ["time-zone", "time zones", "circadian misalignment", "long-haul"]),
    "d3-tulip-en": (["tulip"], ["tulpenmanie", "bulb", "windhandel"]),
    "d3-turf-en": (["artificial turf"], ["synthetic turf", "synthetic field", "3g", "synthetic"]),
}

# How a relevant page's title names the subject.
TITLES: dict[str, list[str]] = {
    # A synonym, abbreviation or the technical name, not the question's words.
    "synonym": ["dev3-en-rg-readme", "dev3-en-rg-filetypes", "dev3-en-borrelia-treatment",
                "dev3-en-bnpl-market-report", "dev3-en-pay-in-four", "dev3-en-danaus-census",
                "dev3-en-dticket-subscribers", "dev3-en-modal-shift-study", "dev3-en-melatonin-review",
                "dev3-en-circadian-travel", "dev3-en-tulpenmanie", "dev3-en-synthetic-injury-meta",
                "dev3-en-3g-lifecycle"],
    # A whole field, with a section on the subject.
    "broader": ["dev3-en-tickborne-surveillance", "dev3-en-household-debt-survey", "dev3-en-pollinator-report",
                "dev3-en-germany-transport-budget", "dev3-en-travel-health-guide",
                "dev3-en-dutch-economy-1630s", "dev3-en-sports-field-planning"],
    # A related aspect in the title, the subject only in the body.
    "aspect": ["dev3-en-code-search-cli", "dev3-en-erythema-migrans", "dev3-en-milkweed-loss",
               "dev3-en-windhandel"],
}
# The subject plus a qualifier (a place, a year, a population): page -> qualifier in its title.
QUALIFIED = {
    "dev3-en-tickborne-surveillance": "2023 surveillance",
    "dev3-en-danaus-census": "2023–24 season",
    "dev3-en-dticket-subscribers": "after two years",
    "dev3-en-3g-lifecycle": "schools",
}

# Each near miss: its kind, and the word that makes it another subject (on the near miss, on no relevant
# page of its question).
NEAR: dict[str, tuple[str, str]] = {
    "dev3-en-nm-gnu-grep": ("another kind", "gnu grep"),
    "dev3-en-nm-silver-searcher": ("another kind", "silver searcher"),
    "dev3-en-nm-vscode": ("another setting", "vs code"),
    "dev3-en-nm-lyme-dogs": ("another population", "dogs"),
    "dev3-en-nm-lyme-europe": ("another place", "europe"),
    "dev3-en-nm-alpha-gal": ("another kind", "alpha-gal"),
    "dev3-en-nm-rent-to-own": ("another kind", "rent-to-own"),
    "dev3-en-nm-bnpl-britain": ("another place", "britain"),
    "dev3-en-nm-b2b-trade-credit": ("another setting", "b2b"),
    "dev3-en-nm-western-monarch": ("another place", "california"),
    "dev3-en-nm-monarchy-support": ("same words, another thing", "monarchy"),
    "dev3-en-nm-bumble-bee": ("another kind", "bumble bee"),
    "dev3-en-nm-9euro": ("another period", "three months"),
    "dev3-en-nm-klimaticket": ("another place", "austria"),
    "dev3-en-nm-49-flight": ("same words, another thing", "airline"),
    "dev3-en-nm-shift-work": ("another setting", "night shift"),
    "dev3-en-nm-social-jetlag": ("same words, another thing", "social jet lag"),
    "dev3-en-nm-melatonin-children": ("another population", "children"),
    "dev3-en-nm-hyacinth": ("another kind", "hyacinth"),
    "dev3-en-nm-ottoman-tulip": ("another place", "ottoman"),
    "dev3-en-nm-bitcoin-tulip": ("same words, another thing", "bitcoin"),
    "dev3-en-nm-racetrack": ("another population", "horse"),
    "dev3-en-nm-backyard-lawn": ("another setting", "backyard"),
    "dev3-en-nm-hockey": ("another kind", "hockey"),
}
KINDS = {"another kind", "another place", "another period", "another population", "another setting",
         "same words, another thing"}


@pytest.fixture(scope="module")
def pages() -> dict[str, Page]:
    return {p.name: p for p in load_pages()}  # raises on a page name used twice across all files


@pytest.fixture(scope="module")
def mine() -> list[dict[str, Any]]:
    return questions_in(DEV3_EN)


@pytest.fixture(scope="module")
def own_files(tmp_path_factory: pytest.TempPathFactory) -> list[Page]:
    return pages_of_files(tmp_path_factory.mktemp("dev3-en-pages"), PREFIX)


@pytest.fixture(scope="module")
def others() -> list[dict[str, Any]]:
    return questions_besides(DEV3_EN)


def _has(text: str, words: list[str]) -> bool:
    return any(fold(w) in fold(text) for w in words)


def test_the_questions_have_pages_distractors_and_near_misses(pages, mine):
    data = json.loads(DEV3_EN.read_text(encoding="utf-8"))
    assert set(data) == {"about", "questions"} and "dev" in data["about"]
    assert len(mine) == len(SUBJECT) == 8 and {q["id"] for q in mine} == set(SUBJECT)
    for q in mine:
        assert set(q) == KEYS and q["split"] == "dev" and q["locale"] == "en-US", q["id"]
        assert q["id"].startswith("d3-") and q["id"].endswith("-en"), q["id"]
        assert 2 <= len(q["pages"]) <= 3 and len(q["distractors"]) == 2 and len(q["near_miss"]) == 3, q["id"]
        named = q["pages"] + q["distractors"] + q["near_miss"]
        assert len(set(named)) == len(named), q["id"]
        for name in named:
            assert name.startswith(PREFIX) and name in pages, (q["id"], name)
            assert pages[name].lang == "en", (q["id"], name)
            assert 4 <= len(pages[name].paragraphs) <= 7, (q["id"], name)
        for name in q["pages"]:
            assert 5 <= len(pages[name].paragraphs) <= 7, (q["id"], name)
        assert 5 <= len(q["facts"]) <= 8, q["id"]
        for fact in q["facts"]:
            assert set(fact) == {"fact", "pages", "all"} and fact["fact"], (q["id"], fact)
        # Facts are spread: every relevant page states at least one.
        assert {n for f in q["facts"] for n in f["pages"]} == set(q["pages"]), q["id"]


def test_every_fact_is_attainable_on_its_page_and_absent_from_the_distractors(pages, mine):
    assert_facts_attainable(pages, mine)


def test_no_near_miss_states_a_key_fact(pages, mine):
    # The near misses tempt with figures of the same kind, but none of them states a key fact in one sentence.
    for q in mine:
        for fact in q["facts"]:
            for name in q["near_miss"]:
                assert not any(_states(fact, s) for s in _sentences(pages[name])), (q["id"], fact["fact"], name)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_5th_to_8th(pages, mine):
    assert_searches_find_them(pages, mine)
    for q in mine:
        top = top_hits(pages, q["question"])
        # The near misses rank high, in the first five.
        assert set(q["near_miss"]) <= set(top[:5]), (q["id"], top)


def test_the_questions_share_no_page_with_the_other_questions(pages, mine, others, own_files):
    assert others and not {q["id"] for q in others} & {q["id"] for q in mine}
    assert_apart(pages, mine, others, own_files, PREFIX)


def test_relevant_pages_name_the_subject_differently_from_the_question(pages, mine):
    by_page = {n: q for q in mine for n in q["pages"]}
    assert set(SUBJECT) == {q["id"] for q in mine}
    for q in mine:
        asked, other_names = SUBJECT[q["id"]]
        assert _has(q["question"], asked), q["id"]
        for name in q["pages"]:
            page = pages[name]
            # Every relevant page is about the subject: it names it, one way or another.
            assert _has(f"{page.title} {page.text}", asked + other_names), (q["id"], name)
    # No relevant page's title carries the question's words for its subject.
    assert not [n for n, q in by_page.items() if _has(pages[n].title, SUBJECT[q["id"]][0])]
    assert {n for names in TITLES.values() for n in names} == set(by_page)
    for kind, names in TITLES.items():
        assert len(names) >= 3 and set(names) <= set(by_page), kind
        for name in names:
            asked, other_names = SUBJECT[by_page[name]["id"]]
            title, body = pages[name].title, pages[name].text
            assert not _has(title, asked), (kind, name)
            if kind == "synonym":
                assert _has(title, other_names), name
            else:  # the subject is in the body
                assert _has(body, asked + other_names), (kind, name)
    for name, qualifier in QUALIFIED.items():
        asked, other_names = SUBJECT[by_page[name]["id"]]
        assert _has(pages[name].title, asked + other_names) and _has(pages[name].title, [qualifier]), name
        # The question itself does not ask about that place, population or period.
        assert not _has(by_page[name]["question"], [qualifier]), name


def test_near_misses_of_every_kind_tempt_with_figures_about_another_subject(pages, mine):
    near = {n: q for q in mine for n in q["near_miss"]}
    assert set(NEAR) == set(near)
    assert {kind for kind, _ in NEAR.values()} == KINDS
    for name, (_kind, marker) in NEAR.items():
        q, page = near[name], pages[name]
        # The word that makes it another subject is on the near miss and on none of the question's pages,
        # and not in the question.
        assert _has(f"{page.title} {page.text}", [marker]), (name, marker)
        assert not any(_has(f"{pages[n].title} {pages[n].text}", [marker]) for n in q["pages"]), (name, marker)
        assert not _has(q["question"], [marker]), (name, marker)
        # Figures of the kind asked for: at least three numbers.
        assert sum(digits for digits, _ in groupby(page.text, str.isdigit)) >= 3, name


def test_the_pages_carry_the_junk_real_pages_carry(pages, mine):
    relevant = {n for q in mine for n in q["pages"]}
    facts = [(f, n) for q in mine for f in q["facts"] for n in f["pages"]]
    # Bylines, dates and reading times glued to the first paragraph, "Related" lines closing a page.
    dated = [n for n in relevant if any(mark in pages[n].paragraphs[0] for mark in ("Updated", "min read"))]
    assert len(dated) >= 4, dated
    assert len([n for n in relevant if pages[n].paragraphs[-1].startswith("Related")]) >= 3
    # A project README: vim modeline and badges glued to the first paragraph, a sponsor blurb, and the
    # install commands the how-to asks for.
    readme = pages["dev3-en-rg-readme"]
    assert readme.name in relevant and "vim:" in readme.paragraphs[0] and "[build: passing]" in readme.paragraphs[0]
    assert "sponsor" in readme.paragraphs[-1].casefold()
    commands = [f for f, n in facts if n == readme.name]
    assert len(commands) == 3 and all(" install ripgrep" in f["all"][0][0] for f in commands)
    assert all(any(_states(f, s) for s in _sentences(readme)) for f in commands)


def test_the_questions_are_phrased_the_way_people_ask(mine):
    asked = [q["question"] for q in mine]
    assert all(t.endswith("?") and t.count("?") == 1 for t in asked)
    assert sum(", and " in t for t in asked) >= 3  # two clauses
    assert any(" in 2023 and 2024" in t for t in asked)  # a coordinated phrase that is one question
    assert any("Python and Markdown files" in t for t in asked)  # ...and another
    assert any("fees, interest rates and risks" in t for t in asked)  # an attribute list
    assert any(" vs " in t for t in asked)  # a comparison
    assert any(t.startswith("How do I ") for t in asked)  # a how-to
    assert any(t.startswith(("Does ", "Do ", "Is ")) for t in asked)  # yes/no
    assert any(t.startswith("Why did ") for t in asked)  # why did it happen
