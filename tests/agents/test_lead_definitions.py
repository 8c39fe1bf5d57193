"""A page whose lead defines its title word as the question's subject is about the subject
(research/agents/definitions.py); a title that sets another kind of the thing beside the question's is
about the one its page names more (research/agents/scope.py); a compound of common words whose first
word is a noun of its own is named only whole (research/agents/subject.py). Questions and pages written
for these tests (none from the eval corpus)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.definitions import lead_defines
from research.agents.scope import scope_verdict
from research.agents.subject import page_about, subject_of

pytestmark = pytest.mark.unit

APNEA_Q = "What are the warning signs of sleep apnea in children?"
OSA_TITLE = "OSA in children: the signs parents miss"
OSA_BODY = ("Children with OSA may wet the bed again, breathe through the mouth and struggle at school. "
            "Snoring on most nights is the commonest sign.\n\n"
            "A sleep study confirms OSA; removing the tonsils cures most children.")


def _osa(lead: str) -> tuple[str, str]:
    return OSA_TITLE, f"{lead}\n\n{OSA_BODY}"


@pytest.mark.parametrize("lead", [
    "OSA, the clinical name for what most parents call sleep apnea, stops a child's breathing for seconds.",
    "OSA, also known as sleep apnea, stops a child's breathing for seconds at a time.",
    "OSA is the most common kind of sleep apnea, and it stops a child's breathing for seconds.",
    "OSA (sleep apnea) stops a child's breathing for seconds at a time during the night.",
    "Sleep apnea, known to doctors as OSA, stops a child's breathing for seconds at a time.",
])
def test_a_lead_that_defines_the_title_word_as_the_subject_makes_the_page_about_it(lead: str):
    subject = subject_of(APNEA_Q)
    assert not page_about(subject, *_osa("OSA stops a child's breathing for seconds at a time.")).about
    verdict = page_about(subject, *_osa(lead))
    assert verdict.about, verdict.why
    assert "lead says" in verdict.why


@pytest.mark.parametrize("opening", ["# {title}\n\n", "{title}\n", "## {title}\n\n"])
def test_the_lead_is_read_after_the_title_line_a_fetched_page_opens_with(opening: str):
    lead = "OSA, also known as sleep apnea, stops a child's breathing for seconds at a time."
    title, body = _osa(lead)
    verdict = page_about(subject_of(APNEA_Q), title, opening.format(title=title) + body)
    assert verdict.about and "lead says" in verdict.why, verdict


@pytest.mark.parametrize("lead", [
    "OSA is not sleep apnea in the usual sense: it is a habit of breathing through the mouth.",
    "OSA can feel like sleep apnea to parents, but it is a habit of breathing through the mouth.",
    "OSA is often mistaken for sleep apnea, though it is a habit of breathing through the mouth.",
    "Unlike sleep apnea, OSA is a habit of breathing through the mouth.",
    # The subject said to be a kind of the page's thing: a page on the wider thing is not on the subject.
    "Sleep apnea is one kind of OSA, a family of breathing problems in sleep.",
    # Another sentence, later in the page, is no definition of the page's word.
    "OSA stops a child's breathing. Parents notice snoring. Doctors test at night. OSA, also known as sleep "
    "apnea, is treated by removing the tonsils.",
])
def test_a_lead_that_compares_denies_or_widens_defines_nothing(lead: str):
    subject = subject_of(APNEA_Q)
    assert not lead_defines(subject, lead, "osa")
    assert not page_about(subject, *_osa(lead)).about


def test_a_chinese_lead_that_gives_another_name_defines_it():
    subject = subject_of("痛风的发病率有多高？", "zh-CN")
    title = "高尿酸血症性关节炎：发病率逐年上升"
    lead = "高尿酸血症性关节炎，俗称痛风，是尿酸结晶沉积在关节里引起的炎症。"
    assert lead_defines(subject, lead, "高尿酸血症性关节炎")
    assert not lead_defines(subject, "高尿酸血症性关节炎不同于痛风，是另一种关节炎。", "高尿酸血症性关节炎")
    assert page_about(subject, title, lead + "\n\n我国成年人中约有1%至3%的人患病，男性多于女性。").about


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["not", "never", "unlike", "like", "rather than", "instead of", "mistaken for"]),
       st.sampled_from(["also known as", "the name for", "a kind of"]))
def test_any_denial_between_the_words_blocks_the_definition(denial: str, marker: str):
    subject = subject_of(APNEA_Q)
    assert lead_defines(subject, f"OSA is {marker} sleep apnea in children.", "osa")
    assert not lead_defines(subject, f"OSA is {denial} {marker} sleep apnea in children.", "osa")


CLUSTER_Q = "How painful is a cluster headache?"


def test_a_title_that_sets_another_kind_beside_the_subject_is_about_the_one_named_more():
    tension = ("Tension headache or cluster headache? How to tell them apart",
               "A tension headache feels like a tight band around the head. Tension headaches are the commonest "
               "kind, and a tension headache can last for hours. A cluster headache is far rarer.")
    cluster = ("Cluster headache or tension headache? How to tell them apart",
               "A cluster headache is among the most painful conditions known. Cluster headaches come in bouts, "
               "and a cluster headache lasts 15 minutes to 3 hours. A tension headache is much milder.")
    verdict = scope_verdict(CLUSTER_Q, "en-US", *tension)
    assert verdict is not None and not verdict.about and not verdict.firm, verdict
    verdict = scope_verdict(CLUSTER_Q, "en-US", *cluster)
    assert verdict is not None and verdict.about, verdict


def test_a_title_naming_the_subject_once_after_a_name_is_not_two_kinds():
    # "Imitrex, the first cluster headache drug": one kind of the thing, named with what it is called.
    page = ("Oxygen, the first cluster headache treatment: how well it works",
            "Oxygen at 12 litres a minute stops a cluster headache within 15 minutes for most patients. "
            "Oxygen is safe, and oxygen can be used at home.")
    verdict = scope_verdict("How is a cluster headache treatment chosen?", "en-US", *page)
    assert verdict is None or verdict.about, verdict


def test_a_common_compound_whose_first_word_is_a_noun_is_named_only_whole():
    subject = subject_of("What are the warning signs of a heart attack in women?")
    arrest = ("Sudden cardiac arrest in women: survival",
              "Sudden cardiac arrest is not a heart attack: the heart stops pumping and the person collapses. "
              "Survival falls with every minute without CPR, and survival doubles with a defibrillator. "
              "Survival is lower for women, whose survival depends on bystanders.")
    assert not page_about(subject, *arrest).about
    # An adjective before a common head still names the thing alone: "solar" is solar power.
    solar = subject_of("How cheap has solar power become?")
    page = ("Rooftop solar in 2025", "Rooftop solar now costs less than grid electricity in most sunny countries. "
            "Solar panels fell in price by 90% in a decade.")
    assert page_about(solar, *page).about


CAR_Q = "How long does a car battery last in a hot climate?"


def test_a_title_where_the_subject_qualifies_a_thing_of_its_own_is_not_about_the_subject():
    # English compounds take their last noun for head: a car battery charger is a charger.
    charger = ("Car battery chargers for hot garages: which to buy",
               "A car battery charger keeps a car battery topped up. Chargers for hot garages need a "
               "temperature sensor, and a car battery charger costs 40 to 120 dollars.")
    verdict = scope_verdict(CAR_Q, "en-US", *charger)
    assert verdict is not None and not verdict.about and not verdict.firm, verdict
    assert "battery charger" in verdict.why
    # An attribute asked of the subject, or words WordNet does not list as one noun, are no other thing.
    for title in ("Car battery life in hot climates", "Car battery pilot lines in Texas",
                  "Car battery costs in hot climates"):
        page = (title, "A car battery lasts three to five years, and a car battery in a hot climate fails sooner.")
        verdict = scope_verdict(CAR_Q, "en-US", *page)
        assert verdict is None or verdict.about, (title, verdict)


def test_a_title_is_read_as_the_subject_model_reads_it():
    from research.agents.subject import title_as_read

    subject = subject_of(APNEA_Q)
    defined = title_as_read(subject, *_osa("OSA, also known as sleep apnea, stops a child's breathing."))
    assert defined.startswith(OSA_TITLE) and "sleep apnea" in defined
    # Not defined, or denied: the title stays as written.
    assert title_as_read(subject, *_osa("OSA stops a child's breathing at night.")) == OSA_TITLE
    assert title_as_read(subject, *_osa("OSA is not sleep apnea: it is a habit of breathing through the mouth.")) \
        == OSA_TITLE
