"""Issue 32: a page that calls the subject by another name still names it (research/agents/synonyms.py).

"Recombinant zoster vaccine" is about the shingles vaccine; the scope gate read "zoster" as another kind of
vaccine and turned the page away. WordNet's single-meaning synonyms are read in the question's words now,
and only those: a word with several meanings ("attic", "stroke") lends no names, and a synonym never lets
in another kind of the thing (avian flu for flu). The pages here were written for these tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research import textre
from research.agents.subject import names_subject, page_about, subject_of
from research.agents.synonyms import aliases, other_names, rewrite, same_meaning


@pytest.mark.parametrize(("word", "names"), [
    ("shingles", {"herpes zoster", "zoster"}),
    ("flu", {"influenza", "grippe"}),
    ("zoster", {"herpes zoster", "shingles"}),
])
def test_a_word_of_one_meaning_has_its_other_names(word, names):
    assert set(other_names(word)) == names


@pytest.mark.parametrize("word", [
    "attic",  # also a head ("noggin") in WordNet: no safe synonym
    "stroke",  # a shot, a throw, an illness
    "insulation",  # first of all the state of being isolated
    "battery",  # common, and several meanings
    "restic",  # not in WordNet
])
def test_a_word_of_several_meanings_or_none_lends_no_names(word):
    assert other_names(word) == ()


def test_names_too_short_or_too_common_to_search_for_are_dropped():
    # WordNet gives "MI" for myocardial infarction and "H" for hydrogen: two letters name nothing here.
    assert "MI" not in other_names("myocardial infarction")
    assert all(len(n) >= 3 for n in other_names("myocardial infarction"))


def test_a_plural_compound_is_looked_up_by_its_singular_and_a_plural_is_no_other_name():
    assert aliases("How efficient are heat pumps in cold climates?") == ()  # "heat pump" is the same name


_RZV = (
    "Recombinant zoster vaccine: efficacy in older adults",
    "The recombinant zoster vaccine prevented herpes zoster in 97% of adults aged 50 and over in its trial. "
    "Two doses are given two to six months apart. Protection against zoster stayed above 80% for seven "
    "years. The zoster vaccine is recommended for adults with weakened immune systems from age 19.",
)
_CHICKENPOX = (
    "Chickenpox vaccine for children: how well does it work?",
    "The varicella vaccine protects children against chickenpox. Two doses prevent 98% of cases. The "
    "chickenpox vaccine is given at 12 to 15 months and again at 4 to 6 years.",
)


def test_a_page_naming_the_subject_by_its_other_name_is_about_it():
    subject = subject_of("How well does the shingles vaccine work, and who should get it?", "en-US")
    verdict = page_about(subject, *_RZV)
    assert verdict.about, verdict.why


def test_a_near_miss_stays_out_when_the_subject_has_other_names():
    subject = subject_of("How well does the shingles vaccine work, and who should get it?", "en-US")
    assert not page_about(subject, *_CHICKENPOX).about


def test_another_kind_named_by_a_synonym_is_still_another_kind():
    # "Avian influenza" is read "avian flu": another kind of flu, as the question's own word would be.
    subject = subject_of("Is the flu vaccine needed every year?", "en-US")
    avian = ("Avian influenza in poultry farms",
             "Avian influenza spreads among chickens and ducks. Outbreaks of avian influenza led farms to cull "
             "millions of birds. Poultry workers are offered protective equipment.")
    seasonal = ("Influenza vaccine: why every year",
                "Influenza viruses change from season to season, so the influenza vaccine is updated every "
                "year. Protection also wanes within months, so a yearly shot is advised.")
    assert not page_about(subject, *avian).about
    assert page_about(subject, *seasonal).about


def test_a_sentence_naming_the_other_name_names_the_subject():
    subject = subject_of("How well does the shingles vaccine work?", "en-US")
    assert names_subject(subject, "Herpes zoster is rare after two doses.")
    assert not names_subject(subject, "Chickenpox is rare after two doses.")


_PAIRS = aliases("How well does the shingles vaccine work?")
_TEXT = st.lists(st.sampled_from(["zoster", "herpes zoster", "Zoster", "zosters", "herpes", "shingles", "a", "b",
                                  " ", ".", ",", "-", "z", "oster"]), max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_rewriting_puts_the_question_word_in_for_whole_other_names_only(text):
    out = rewrite(text, _PAIRS)
    if "zoster" not in text.lower():
        assert out == text  # nothing else is touched
    assert "zoster" not in textre.findall(r"[a-z]+", out.lower())  # every whole other name is replaced
    assert rewrite(out, _PAIRS) == out  # the question's word is no other name
    assert rewrite(text, ()) == text


def test_a_page_using_the_head_in_a_derived_form_is_not_turned_away():
    # "never names insulation" was firm evidence of another thing (spray foam *roofing*); a guide whose title
    # names "spray … foam" and ends there, and which says "insulates", is about spray foam insulation
    # (tests/agents/test_scope.py), while a roofing page stays out.
    subject = subject_of("What does spray foam insulation cost in an attic?", "en-US")
    guide = ("Spray polyurethane foam: a homeowner's guide",
             "Closed-cell foam insulates at about R-6.5 per inch and seals air leaks in one pass. Open-cell "
             "foam costs less per board foot. A contractor sprays it between the rafters.")
    roofing = ("Spray foam roofing on commercial flat roofs",
               "Spray foam roofing is sprayed over an existing flat roof and coated against sunlight. A "
               "foam roof lasts 20 to 30 years when it is recoated.")
    assert page_about(subject, *guide).about
    verdict = page_about(subject, *roofing)
    assert not verdict.about and verdict.firm


@pytest.mark.parametrize(("question", "subject"), [
    ("Is the flu vaccine needed every year?", ("flu", "vaccine")),  # a participle ends the subject
    ("Are heat pumps recommended for old houses?", ("heat", "pump")),
    ("What is the current state of coral reef bleaching?", ("coral", "reef", "bleach")),  # -ing: a noun
])
def test_a_participle_after_is_ends_the_subject(question, subject):
    from research.agents.scope import subject_phrase

    assert subject_phrase(question, "en-US") == subject


def test_a_participle_ends_the_parts_subject_but_not_the_subject_model_s_terms():
    # Found by the full suite: when the subject model's terms also ended at a participle, "How have solar
    # power costs changed" got the compound term "solar power cost" (an attribute noun in it) instead of
    # solar, fewer pages were about it, and its step read on into heat-pump pages.
    from research.agents.subject import subject_of

    subject = subject_of("How have solar power costs changed?", "en-US")
    assert [t.core for t in subject.terms] == [("solar",)]


@pytest.mark.parametrize(("word", "other", "same"), [
    ("疲倦", "疲劳", True),  # one synonym group of Cilin, each word of one meaning
    ("疲劳", "困倦", True),
    ("橄榄球", "足球", False),  # one class ("#"), not one meaning: rivals
    ("酒后", "疲劳", False),
    ("保险", "可靠", False),  # 保险 has two meanings in Cilin: no synonyms are taken for it
    ("累", "疲劳", False),  # one character is too ambiguous a name
    ("shingles", "zoster", True),  # English: WordNet's names of a single-meaning noun
    ("attic", "loft", False),
])
def test_same_meaning_takes_synonyms_of_one_meaning_only(word, other, same):
    assert same_meaning(word, other) is same
    if not word.isascii():  # Cilin's groups are symmetric; WordNet's names are looked up from the word
        assert same_meaning(other, word) is same
