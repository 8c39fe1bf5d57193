"""The extra dev questions (bench/eval/questions_devplus.json, pages in bench/eval/pages/devplus-*.txt) are
built to tune how an engine judges "is this page about the question's subject": relevant pages that name
the subject differently from the question (a synonym or technical name, a broader title, a related aspect
with the subject in the body, the subject plus a qualifier), and near-miss pages of six kinds (another kind
of the same thing, another place, period or population, the same subject in another setting, the same
words about another thing) that a search for the question finds.

Like tests/bench/test_eval_fresh.py, it reads only the corpus (bench/eval/corpus.py) and the JSON: the
questions were written without the engine's code, and the test keeps off it too.
"""

from __future__ import annotations

import re

from bench.eval.corpus import PAGES_DIR
from tests.support.eval_pages import (
    assert_apart,
    assert_facts_attainable,
    assert_near_misses_about_another_subject,
    assert_question_shapes,
    assert_readme_junk,
    assert_searches_find_them,
    assert_subject_named_differently,
    facts_on_pages,
    glued_headers,
    has,
    relevant_pages,
    split_fixtures,
    stated,
    stated_first,
)

EVAL_DIR = PAGES_DIR.parent
DEVPLUS = EVAL_DIR / "questions_devplus.json"
CJK = re.compile(r"[\u4e00-\u9fff]")

# Chinese questions about a foreign topic, answered by English pages.
ZH_OVER_EN = {"dp-us-wood-houses-zh", "dp-nfl-concussion-zh"}

# The subject as each question names it, and the other names its relevant pages use for it.
SUBJECT: dict[str, tuple[list[str], list[str]]] = {
    "dp-heart-attack-women-en": (["heart attack"], ["myocardial infarction", "stemi"]),
    "dp-home-insurance-en": (["homeowners insurance"], ["property insurance", "home insurance", "home insurer"]),
    "dp-hiit-en": (["high-intensity interval training", "hiit"], ["interval training", "intervals"]),
    "dp-spray-foam-en": (["spray foam"], ["spray polyurethane foam", "spf"]),
    "dp-speed-cameras-en": (["speed camera"], ["automated speed enforcement", "safety camera", "average speed"]),
    "dp-restic-en": (["restic"], []),
    "dp-shingles-vaccine-en": (["shingles vaccine"], ["zoster vaccine", "herpes zoster", "shingles"]),
    "dp-term-life-en": (["term life insurance"], ["level term", "life cover", "life insurance"]),
    "dp-us-wood-houses-zh": (["木结构"], ["wood-frame", "wood frame", "stick-built", "wood house"]),
    "dp-nfl-concussion-zh": (["脑震荡"], ["concussion", "mild traumatic brain injury"]),
    "dp-flu-vaccine-zh": (["流感疫苗"], ["流行性感冒疫苗", "疫苗"]),
    "dp-mortgage-prepay-zh": (["房贷提前还款"], ["提前还款", "提前还贷"]),
    "dp-older-exercise-zh": (["快走", "慢跑"], ["健步走", "跑步", "有氧活动"]),
    "dp-drowsy-driving-zh": (["疲劳驾驶"], ["困倦驾驶", "连续驾驶", "疲劳"]),
    "dp-child-car-seat-zh": (["安全座椅"], ["儿童约束系统", "后向安装", "增高垫"]),
    "dp-marathon-death-zh": (["马拉松"], ["长跑", "路跑"]),
}

# How a relevant page's title names the subject (the point of the split).
TITLES: dict[str, list[str]] = {
    # A synonym, abbreviation or the technical name, not the question's words.
    "synonym": ["devplus-mi-women", "devplus-home-premiums", "devplus-spf-guide", "devplus-ase-review",
                "devplus-flu-guideline-zh", "devplus-brisk-walk-zh", "devplus-drowsy-data-zh",
                "devplus-prepay-calc-zh", "devplus-rzv-efficacy", "devplus-level-term-premiums",
                "devplus-life-cover-needs", "devplus-crs-effect-zh", "devplus-marathon-scd-zh"],
    # A whole field, with a section on the subject.
    "broader": ["devplus-cvd-report", "devplus-attic-options", "devplus-activity-guide-zh", "devplus-adult-schedule",
                "devplus-household-resilience", "devplus-crs-survey-zh"],
    # A related aspect in the title, the subject only in the body.
    "aspect": ["devplus-stemi-timing", "devplus-reinsurance-renewal", "devplus-unvented-attic",
               "devplus-average-speed", "devplus-restic-guide", "devplus-fat-loss-trial",
               "devplus-drowsy-science-zh", "devplus-prepay-fees-zh", "devplus-mortgage-rate-zh",
               "devplus-restic-nightly", "devplus-crs-rearward-zh", "devplus-precheck-zh"],
}
# The subject plus a qualifier (a place, a year, a population): page -> qualifier in its title.
QUALIFIED = {
    "devplus-home-florida": "florida",
    "devplus-flu-elderly-zh": "60岁以上老人",
    "devplus-nfl-concussion-data": "2023 season",
    "devplus-zoster-older-adults": "adults 50 and older",
    "devplus-race-medical-report-zh": "2023年",
    "devplus-older-adults-hiit": "adults over 60",
    "devplus-uk-safety-cameras": "great britain",
}

# Each near miss: its kind, and the word that makes it another subject (on the near miss, on no relevant
# page of its question).
NEAR: dict[str, tuple[str, str]] = {
    "devplus-nm-cardiac-arrest": ("same words, another thing", "cardiac arrest"),
    "devplus-nm-stroke": ("another kind", "stroke"),
    "devplus-nm-panic": ("same words, another thing", "panic"),
    "devplus-nm-auto-premiums": ("another kind", "car insurance"),
    "devplus-nm-uk-home": ("another place", "united kingdom"),
    "devplus-nm-renters": ("another population", "renters"),
    "devplus-nm-racehorse": ("another setting", "racehorse"),
    "devplus-nm-fasting": ("same words, another thing", "fasting"),
    "devplus-nm-skier-vo2": ("another population", "skier"),
    "devplus-nm-cellulose": ("another kind", "blown-in cellulose"),
    "devplus-nm-uffi": ("another period", "1970s"),
    "devplus-nm-spray-roof": ("another setting", "commercial flat roofs"),
    "devplus-nm-redlight": ("another kind", "red-light"),
    "devplus-nm-dashcam": ("same words, another thing", "dashcam"),
    "devplus-nm-speed-humps": ("same words, another thing", "speed humps"),
    "devplus-nm-borg": ("another kind", "borg"),
    "devplus-nm-rsync": ("another kind", "rsync"),
    "devplus-nm-timemachine": ("another setting", "time machine"),
    "devplus-nm-zostavax": ("another period", "zostavax"),
    "devplus-nm-chickenpox": ("another population", "children"),
    "devplus-nm-roof-shingles": ("same words, another thing", "roof"),
    "devplus-nm-whole-life": ("another kind", "whole life"),
    "devplus-nm-pet-insurance": ("same words, another thing", "pet"),
    "devplus-nm-term-over60": ("another population", "after 60"),
    "devplus-nm-ebike-seat-zh": ("another setting", "电动自行车"),
    "devplus-nm-flight-seat-zh": ("another setting", "飞机"),
    "devplus-nm-schoolbus-zh": ("another setting", "校车"),
    "devplus-nm-trail-race-zh": ("another kind", "越野跑"),
    "devplus-nm-football-scd-zh": ("another population", "足球"),
    "devplus-nm-triathlon-zh": ("another kind", "铁人三项"),
    "devplus-nm-japan-wood-zh": ("another place", "日本"),
    "devplus-nm-ancient-wood-zh": ("another period", "古建筑"),
    "devplus-nm-us-house-price-zh": ("same words, another thing", "房价"),
    "devplus-nm-rugby-zh": ("another kind", "英式橄榄球"),
    "devplus-nm-jockey-zh": ("another setting", "骑师"),
    "devplus-nm-covid-booster-zh": ("another kind", "新冠"),
    "devplus-nm-avian-flu-zh": ("another setting", "禽流感"),
    "devplus-nm-car-loan-zh": ("another kind", "车贷"),
    "devplus-nm-us-refi-zh": ("another place", "美国"),
    "devplus-nm-card-installment-zh": ("same words, another thing", "信用卡"),
    "devplus-nm-pregnant-exercise-zh": ("another population", "孕妇"),
    "devplus-nm-race-walking-zh": ("same words, another thing", "竞走"),
    "devplus-nm-dog-walk-zh": ("same words, another thing", "狗"),
    "devplus-nm-drunk-zh": ("another kind", "醉驾"),
    "devplus-nm-pilot-fatigue-zh": ("another setting", "飞行员"),
    "devplus-nm-work-fatigue-zh": ("another setting", "工地"),
}
KINDS = {"another kind", "another place", "another period", "another population", "another setting",
         "same words, another thing"}


pages, mine, own_files, others = split_fixtures(DEVPLUS, "devplus-")


def test_the_dev_additions_have_questions_with_pages_distractors_and_near_misses(pages, mine):
    assert_question_shapes(pages, mine, DEVPLUS, about="dev", split="dev", prefix="devplus-", id_prefix="dp-")
    assert len(mine) == len(SUBJECT) and {q["id"] for q in mine} == set(SUBJECT)
    locales = [q["locale"] for q in mine]
    assert locales.count("en-US") == locales.count("zh-CN") == len(mine) // 2
    for q in mine:
        language = q["locale"][:2]
        # Near misses are in the question's language; so is the rest, but for a Chinese question on a
        # foreign topic, whose relevant pages and distractors are English.
        assert all(pages[n].lang == language for n in q["near_miss"]), q["id"]
        page_language = "en" if q["id"] in ZH_OVER_EN else language
        assert all(pages[n].lang == page_language for n in q["pages"] + q["distractors"]), q["id"]


def test_two_chinese_questions_are_answered_by_english_pages_found_by_chinese_keywords(pages, mine):
    over = {q["id"] for q in mine if q["locale"] == "zh-CN" and all(pages[n].lang == "en" for n in q["pages"])}
    assert over == ZH_OVER_EN
    for q in mine:
        for name in q["pages"] + q["distractors"]:
            page = pages[name]
            if page.lang == "en":
                # Chinese search terms on an English page only where the question is Chinese, and never
                # in its title or text.
                assert bool(CJK.search(page.keywords)) == (q["id"] in ZH_OVER_EN), (q["id"], name)
                assert not CJK.search(page.title + page.text), (q["id"], name)


def test_every_fact_is_attainable_on_its_page_and_absent_from_the_distractors(pages, mine):
    assert_facts_attainable(pages, mine)


def test_a_search_for_the_question_finds_the_near_misses_and_ranks_an_answer_5th_to_8th(pages, mine):
    assert_searches_find_them(pages, mine)


def test_the_dev_additions_share_no_page_with_the_other_questions(pages, mine, others, own_files):
    assert_apart(pages, mine, others, own_files, "devplus-")


def test_relevant_pages_name_the_subject_differently_from_the_question(pages, mine):
    by_page = assert_subject_named_differently(pages, mine, SUBJECT, TITLES, QUALIFIED)
    # Titles that do not carry the question's words for its subject, on pages in the question's language.
    differently = [n for n, q in by_page.items() if pages[n].lang == q["locale"][:2]
                   and not has(pages[n].title, SUBJECT[q["id"]][0])]
    assert len(differently) >= 16, differently


def test_near_misses_of_every_kind_tempt_with_figures_about_another_subject(pages, mine):
    assert_near_misses_about_another_subject(pages, mine, NEAR, KINDS)


def test_the_pages_carry_the_junk_real_pages_carry(pages, mine):
    relevant = relevant_pages(mine)
    facts = facts_on_pages(mine)
    # Chinese pages with title, byline, date and reading time glued to the first paragraph, relevant pages
    # among them, some of which state a key fact in their first sentence.
    glued = glued_headers(pages, "devplus-", title_first=True)
    assert len(glued) >= 4 and all(p.name in relevant for p in glued)
    assert len(stated_first(pages, facts, glued)) >= 3
    # A project README, and the commands the how-to asks for, stated in it.
    readme = pages["devplus-restic-readme"]
    assert_readme_junk(readme, relevant, in_place=True)
    commands = [f for f, n in facts if n == readme.name]
    assert len(commands) == 2 and all(f["all"][0][0].startswith("restic ") for f in commands)
    assert all(stated(f, readme) for f in commands)


def test_the_questions_are_phrased_the_way_people_ask(mine):
    asked = {q["id"]: q["question"] for q in mine}
    en = [t for i, t in asked.items() if i.endswith("-en")]
    zh = [t for i, t in asked.items() if i.endswith("-zh")]
    assert sum(", and " in t for t in en) >= 3  # two clauses
    assert any(" in 2022 and 2023" in t for t in en)  # a coordinated phrase that is one question
    assert any("costs, risks and benefits" in t for t in en)  # an attribute list
    assert any(" better than " in t for t in en) and any("哪个更好" in t for t in zh)  # comparisons
    assert any(t.startswith("How do I ") for t in en)  # a how-to
    assert any(t.startswith(("Do ", "Is ")) for t in en) and any("吗，" in t for t in zh)  # yes/no
    assert all("，" in t and t.endswith("？") and t.count("？") == 1 for t in zh)  # two clauses, one mark
    assert any("和" in t.split("，")[1] for t in zh)  # a Chinese coordinated phrase ("费用和风险")
