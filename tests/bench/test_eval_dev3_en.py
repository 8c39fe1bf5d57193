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

from bench.eval.corpus import PAGES_DIR
from tests.support.eval_pages import (
    assert_apart,
    assert_facts_attainable,
    assert_near_misses_about_another_subject,
    assert_near_misses_state_no_fact,
    assert_question_shapes,
    assert_readme_junk,
    assert_searches_find_them,
    assert_subject_named_differently,
    facts_on_pages,
    has,
    named,
    relevant_pages,
    split_fixtures,
    stated,
)

EVAL_DIR = PAGES_DIR.parent
DEV3_EN = EVAL_DIR / "questions_dev3_en.json"
PREFIX = "dev3-en-"

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


pages, mine, own_files, others = split_fixtures(DEV3_EN, PREFIX)


def test_the_questions_have_pages_distractors_and_near_misses(pages, mine):
    assert_question_shapes(pages, mine, DEV3_EN, about="dev", split="dev", prefix=PREFIX, id_prefix="d3-",
                           near_misses=(3, 3))
    assert len(mine) == len(SUBJECT) == 8 and {q["id"] for q in mine} == set(SUBJECT)
    for q in mine:
        assert q["locale"] == "en-US" and q["id"].endswith("-en"), q["id"]
        for name in named(q):
            assert pages[name].lang == "en", (q["id"], name)
            assert 4 <= len(pages[name].paragraphs) <= 7, (q["id"], name)
        for fact in q["facts"]:
            assert set(fact) == {"fact", "pages", "all"} and fact["fact"], (q["id"], fact)


def test_every_fact_is_attainable_on_its_page_and_absent_from_the_distractors(pages, mine):
    assert_facts_attainable(pages, mine)


def test_no_near_miss_states_a_key_fact(pages, mine):
    assert_near_misses_state_no_fact(pages, mine)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_5th_to_8th(pages, mine):
    # The near misses rank high, in the first five.
    assert_searches_find_them(pages, mine, near_miss_within=5)


def test_the_questions_share_no_page_with_the_other_questions(pages, mine, others, own_files):
    assert others and not {q["id"] for q in others} & {q["id"] for q in mine}
    assert_apart(pages, mine, others, own_files, PREFIX)


def test_relevant_pages_name_the_subject_differently_from_the_question(pages, mine):
    by_page = assert_subject_named_differently(pages, mine, SUBJECT, TITLES, QUALIFIED)
    # No relevant page's title carries the question's words for its subject, and every one is in TITLES.
    assert not [n for n, q in by_page.items() if has(pages[n].title, SUBJECT[q["id"]][0])]
    assert {n for kind_pages in TITLES.values() for n in kind_pages} == set(by_page)


def test_near_misses_of_every_kind_tempt_with_figures_about_another_subject(pages, mine):
    assert_near_misses_about_another_subject(pages, mine, NEAR, KINDS)


def test_the_pages_carry_the_junk_real_pages_carry(pages, mine):
    relevant = relevant_pages(mine)
    # Bylines, dates and reading times glued to the first paragraph, "Related" lines closing a page.
    dated = [n for n in relevant if any(mark in pages[n].paragraphs[0] for mark in ("Updated", "min read"))]
    assert len(dated) >= 4, dated
    assert len([n for n in relevant if pages[n].paragraphs[-1].startswith("Related")]) >= 3
    # A project README, and the install commands the how-to asks for, stated in it.
    readme = pages["dev3-en-rg-readme"]
    assert_readme_junk(readme, relevant, in_place=True)
    commands = [f for f, n in facts_on_pages(mine) if n == readme.name]
    assert len(commands) == 3 and all(" install ripgrep" in f["all"][0][0] for f in commands)
    assert all(stated(f, readme) for f in commands)


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
