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


def test_a_kind_named_by_a_similar_adjective_is_the_same_kind():
    subject = subject_of("How long does artificial grass last in a garden?", "en-US")
    page = ("Synthetic grass: how long it lasts and when to replace it",
            "Synthetic grass in a home garden usually lasts 15 to 20 years. The fibres fade in strong sun, and "
            "the infill needs topping up every few years.")
    assert page_about(subject, *page).about


def test_another_colour_is_still_another_kind():
    subject = subject_of("What does green hydrogen cost to make?", "en-US")
    page = ("Blue hydrogen: what it costs to make from natural gas",
            "Blue hydrogen is made from natural gas with the carbon captured. It costs about 1.5 to 2.5 dollars a "
            "kilogram to make, and blue hydrogen plants are being built in Texas.")
    assert not page_about(subject, *page).about
