"""What answers a part of a question (issue 32, items 2 and 5), beyond the part's own words:

- a figure in the unit the part asks for ("within 90 minutes" for "how soon should treatment start");
- an attribute noun of the same group ("symptoms" for "the warning signs", 成本 for 费用);
- a sentence of a page the subject model finds to be on the subject, though neither it nor its title
  repeats the question's words ("Myocardial infarction, the medical name for … a heart attack").

Pages and questions written for these tests (none from the eval corpus)."""

from __future__ import annotations

import pytest

from research.agents.engines.offline.parts import question_aspects
from research.agents.engines.offline.read import about_subject, covered
from research.agents.rank import RankedSentence, tokenize
from research.agents.types import SourceRef
from research.agents.words import aspect_kin

pytestmark = pytest.mark.unit

QUESTION = "What are the warning signs of sleep apnea in children, and how soon should treatment start?"
OSA = SourceRef(1, "https://example.org/osa", "OSA in children: what parents notice",
                "OSA, the clinical name for what most parents call sleep apnea, stops a child's breathing for "
                "seconds at a time. Children with OSA snore most nights and may wet the bed again, and their "
                "symptoms are easy to mistake for a cold. Surgery within 6 weeks of the diagnosis cures most "
                "children. The tonsils are removed under general anaesthesia.")
SCHOOL = SourceRef(2, "https://example.org/sleep-school", "Sleep apnea and school marks",
                   "Children with sleep apnea get lower marks at school. Sleep apnea was measured in 2,000 "
                   "children.")


def _ranked(*pairs: tuple[str, int]) -> list[RankedSentence]:
    return [RankedSentence(text, source, 1.0 - i / 10, i) for i, (text, source) in enumerate(pairs)]


def _parts() -> tuple[str, str]:
    aspects = question_aspects(QUESTION, "en-US")
    assert len(aspects) == 2
    return aspects[0].title, aspects[1].title


def test_a_figure_in_the_unit_asked_for_answers_a_part_in_other_words():
    _, soon = _parts()
    asked = {"soon", "treatment", "start"}
    check = about_subject(QUESTION, "en-US", [OSA, SCHOOL])
    in_unit = _ranked(("Surgery within 6 weeks of the diagnosis cures most children.", 1))
    assert covered(in_unit, shown=5, asked=asked, kind="much", on_subject=check, sources=[OSA], words=soon)
    # A figure in another unit (a count, not a span of time) does not.
    count = _ranked(("Sleep apnea was measured in 2,000 children.", 2))
    assert not covered(count, shown=5, asked=asked, kind="much", on_subject=check, sources=[SCHOOL], words=soon)


def test_an_attribute_noun_of_the_same_group_answers_the_part():
    signs, _ = _parts()
    aspect = question_aspects(QUESTION, "en-US")[0]
    assert {"symptoms", "symptom"} <= set(aspect.kin) and "symptoms" not in aspect.words
    assert aspect_kin("费用") and "成本" in aspect_kin("费用")
    assert aspect_kin("sleep") == ()  # only attribute nouns have kin; a subject word never does
    asked = set(tokenize(" ".join([*aspect.words, *aspect.kin]))) - {"sleep", "apnea", "children"}
    check = about_subject(QUESTION, "en-US", [OSA, SCHOOL])
    ranked = _ranked(("Children with OSA snore most nights and may wet the bed again, and their symptoms are easy "
                      "to mistake for a cold.", 1))
    assert covered(ranked, shown=5, asked=asked, kind="", on_subject=check, sources=[OSA], words=signs)


def test_the_subject_model_not_the_question_s_words_says_what_is_on_the_subject():
    check = about_subject(QUESTION, "en-US", [OSA, SCHOOL])
    # Neither this sentence nor its page's title says "sleep apnea"; the page's lead defines OSA as it.
    assert check({"text": "Children with OSA snore most nights and may wet the bed again.", "source": 1})
    other = SourceRef(3, "https://example.org/asthma", "Asthma in children",
                      "Asthma makes a child's airways narrow. Asthma attacks come at night, and asthma inhalers "
                      "help most children. Asthma is common.")
    check = about_subject(QUESTION, "en-US", [OSA, SCHOOL, other])
    assert not check({"text": "Asthma attacks come at night.", "source": 3})


# ---------------------------------------------------------------- the answer never skips a part

def _sections(first: list[dict], second: list[dict]):
    from research.agents.engines.offline.write import _Section

    signs, soon = _parts()
    return [_Section(signs, first, "", True, {"asked": ["warning", "signs", "symptoms"]}),
            _Section(soon, second, "", True, {"asked": ["soon", "treatment", "start"]})]


SNORE = {"text": "Children with sleep apnea snore most nights, a sign parents notice first.", "source": 1,
         "score": 1.0}
MARKS = {"text": "Children with sleep apnea get lower marks at school, a sign teachers notice.", "source": 2,
         "score": 0.5}
SURGERY = {"text": "Treatment should start within 6 weeks of the diagnosis.", "source": 1, "score": 1.0}


def test_a_part_with_nothing_to_quote_says_so_instead_of_vanishing():
    from research.agents.engines.offline.write import _answer

    signs, soon = _parts()
    aspects = question_aspects(QUESTION, "en-US")
    # The second part's section quotes pages the answer may not (not shown to be on the subject): the
    # answer says so and points to the section.
    chosen = _answer(QUESTION, aspects, _sections([SNORE], []), below=frozenset({signs, soon}))
    labels = [label for label, _ in chosen if label]
    assert labels == [signs, soon]
    note = next(s for label, s in chosen if label == soon)
    assert note.get("note") and "section below" in note["text"]
    # With nothing in its section either, it says that no source was found on it.
    chosen = _answer(QUESTION, aspects, _sections([SNORE], []), below=frozenset({signs}))
    note = next(s for label, s in chosen if label == soon)
    assert note.get("note") and "No source found" in note["text"]


def test_a_sentence_on_another_point_never_fills_a_part_that_has_an_answer():
    from research.agents.engines.offline.write import _answer

    aspects = question_aspects(QUESTION, "en-US")
    # Two quotes a part: the second sentence of the second part's section is about school marks, not about
    # when treatment starts, and stays out of that part's answer.
    off = {"text": "Sleep apnea was measured in 2,000 children in 2023.", "source": 2, "score": 2.0}
    chosen = _answer(QUESTION, aspects, _sections([SNORE, MARKS], [SURGERY, off]))
    quoted = [s["text"] for _, s in chosen]
    assert SURGERY["text"] in quoted and off["text"] not in quoted


def test_a_part_whose_only_quote_is_above_but_whose_step_found_more_points_to_its_section():
    from research.agents.engines.offline.write import _answer, _Section

    signs, soon = _parts()
    aspects = question_aspects(QUESTION, "en-US")
    doubtful = {"text": "Surgery is advised within 6 weeks in one clinic's guidance.", "source": 2, "score": 0.4,
                "doubtful": True}
    # The second step's one answerable sentence is the first part's quote; it also ranked a doubtful one,
    # which its section shows: the answer must not claim that the quote above answers the second part.
    sections = [_Section(signs, [SNORE], "", True, {"sentences": [SNORE]}),
                _Section(soon, [SNORE], "", True, {"sentences": [SNORE, doubtful]})]
    chosen = _answer(QUESTION, aspects, sections, below=frozenset({signs, soon}))
    note = next(s for label, s in chosen if label == soon)
    assert "section below" in note["text"], chosen
    # When all the step found is quoted above, the answer says so.
    sections[1] = _Section(soon, [SNORE], "", True, {"sentences": [SNORE]})
    note = next(s for label, s in _answer(QUESTION, aspects, sections, below=frozenset({signs, soon}))
                if label == soon)
    assert "answer above" in note["text"]


def test_how_well_it_works_asks_how_effective_it_is():
    aspect = question_aspects("How well does the shingles vaccine work, and who should get it?", "en-US")[0]
    assert {"efficacy", "effective", "effectiveness"} <= set(aspect.kin)
    assert "well" not in aspect_kin("well")  # "as well" answers nothing
    asked = set(tokenize(" ".join([*aspect.words, *aspect.kin])))
    page = SourceRef(1, "https://example.org/rzv", "Shingles vaccine: the trials",
                     "The shingles vaccine was tested in 29,000 adults. The shingles vaccine's efficacy was 97 "
                     "percent in the first trial.")
    check = about_subject(aspect.title, "en-US", [page])
    ranked = _ranked(("The shingles vaccine's efficacy was 97 percent in the first trial.", 1))
    assert covered(ranked, shown=5, asked=asked - {"shingles", "vaccine"}, kind="", on_subject=check,
                   sources=[page], words=aspect.title)
