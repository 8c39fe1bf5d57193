"""A title that names the question's kind by an adjective of the same WordNet cluster ("synthetic grass" for
artificial grass) is about the same thing; another colour or an antonym is still another kind. Questions
and pages written for these tests; none comes from the eval corpus."""

from __future__ import annotations

import pytest

from research.agents.subject import page_about, subject_of
from research.agents.synonyms import alike_adjectives


@pytest.mark.parametrize(("word", "other", "alike"), [
    ("artificial", "synthetic", True),
    ("large", "big", True),
    ("annual", "yearly", True),
    ("green", "blue", False),  # colours share the cluster "chromatic": two kinds
    ("black", "white", False),
    ("cold", "warm", False),  # antonyms: another cluster
    ("private", "public", False),
    ("artificial", "artificial", False),  # the same word is no other name
])
def test_adjectives_alike_by_wordnet_cluster(word: str, other: str, alike: bool):
    assert alike_adjectives(word, other) is alike


def test_a_kind_named_by_a_similar_adjective_is_read_last_not_turned_away():
    subject = subject_of("How long does artificial grass last in a garden?", "en-US")
    page = ("Synthetic grass: how long it lasts and when to replace it",
            "Synthetic grass in a home garden usually lasts 15 to 20 years. The fibres fade in strong sun, and "
            "the infill needs topping up every few years.")
    verdict = page_about(subject, *page)
    assert not verdict.firm  # (before: "its title is about synthetic grass", turned away)
    # One cluster may also hold another kind (independent schools are no free schools): never accepted outright.
    schools = subject_of("How do free schools work in England?", "en-US")
    assert not page_about(schools, "Independent schools in England: fees and inspections",
                          "Independent schools in England charge fees and are inspected by their own body.").about


def test_another_colour_is_still_another_kind():
    subject = subject_of("What does green hydrogen cost to make?", "en-US")
    page = ("Blue hydrogen: what it costs to make from natural gas",
            "Blue hydrogen is made from natural gas with the carbon captured. It costs about 1.5 to 2.5 dollars a "
            "kilogram to make, and blue hydrogen plants are being built in Texas.")
    assert not page_about(subject, *page).about


# -- a word and a capital letter name one thing: "vitamin D", "hepatitis B" ------------------------------------

VITAMIN_D = "What are the symptoms of vitamin D deficiency in adults?"


def test_a_capital_letter_after_a_word_is_part_of_the_name():
    from research.agents.scope import subject_phrase

    assert subject_of(VITAMIN_D, "en-US").terms[0].core[0] == "vitamin d"
    assert subject_phrase(VITAMIN_D, "en-US") == ("vitamin d", "deficiency")
    assert subject_of("Is hepatitis B curable?", "en-US").terms[0].core[0] == "hepatitis b"
    assert subject_of("Can I take ibuprofen with a cold?", "en-US").terms[0].core == ("ibuprofen",)  # not "I"
    # The article "a" is no letter name, whatever capitals the clause holds ("Are", "After").
    assert subject_of("Are electric cars a good investment?", "en-US").terms[0].core == ("electric car",)
    assert subject_of("Is a chest X ray safe?", "en-US").terms[0].text == "chest X"


def test_another_letter_of_the_same_word_is_another_thing():
    subject = subject_of(VITAMIN_D, "en-US")
    assert page_about(subject, "Vitamin D deficiency in adults",
                      "Vitamin D deficiency is common in winter. Low vitamin D levels cause bone pain.").about
    assert not page_about(subject, "Vitamin B12 deficiency: symptoms",
                          "Vitamin B12 deficiency causes tiredness and pins and needles in older adults.").about
    hepatitis = subject_of("Is hepatitis B curable?", "en-US")
    assert not page_about(hepatitis, "Hepatitis C: a cure in 12 weeks",
                          "Hepatitis C can now be cured with 8 to 12 weeks of tablets in 95 percent of people.").about


def test_another_number_is_another_kind_and_a_roman_numeral_the_same():
    # (A guard: the scope gate's numbers rule already tells type 2 from type 1; "Type I" is type 1.)
    subject = subject_of("Is type 1 diabetes genetic?", "en-US")
    assert not page_about(subject, "Type 2 diabetes: is it in your genes?",
                          "Type 2 diabetes runs in families. If a parent has type 2 diabetes, your risk is "
                          "higher.").about
    assert page_about(subject, "Type I diabetes: genetics and risk",
                      "Type I diabetes is an autoimmune disease. A child of a parent with type I diabetes has a "
                      "higher risk.").about


def test_a_number_after_a_word_names_nothing_new():
    # "top 10" is a count, not a kind: the term stays what it was. (A guard.)
    terms = subject_of("What are the top 10 tourist attractions in Paris?", "en-US").terms
    assert all("top 10" not in t.core for t in terms)


def test_difference_is_asked_of_what_it_is_between():
    from research.agents.scope import subject_phrase

    assert subject_phrase("What is the difference between a stroke and a heart attack?", "en-US") != ("difference",)
