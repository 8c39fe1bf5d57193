"""A part that asks "who should get it" (哪些人应该…) wants a group of people named as the ones who should
(research.agents.engines.offline.question: the "who" kind and its people unit): not a trial's "adults aged
60 and older", nor "researchers" who "reasoned". The step, its coverage test and the answer take such a
sentence first. Likewise a part that asks for the warning signs or side effects wants symptoms named
(WordNet's, two or more), not the word "symptoms". Pages and questions written for these tests; in-memory
context, no model, no network."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.engines.offline import OfflineEngine
from research.agents.engines.offline.read import asked_unit, part_kind
from research.agents.engines.offline.select import answer_up
from research.agents.rank import RankedSentence
from tests.support.fake_context import FakeContext, FakePage

RECOMMENDED = "The vaccine is recommended for all adults aged 50 and older."


@pytest.mark.parametrize("part", [
    "Who should get the shingles vaccine?", "who needs a booster", "Who is eligible for the rebate?",
    "For whom is statin therapy advised?", "Who is most at risk of heat stroke?",
    "哪些人应该接种流感疫苗", "带状疱疹疫苗适合谁", "哪些人群需要补充维生素D",
])
def test_a_part_that_asks_who_should_is_a_who_part(part):
    assert part_kind(part) == "who"
    assert asked_unit(part) is not None


@pytest.mark.parametrize(("part", "kind"), [
    ("Who makes Quillmate?", ""),  # a maker, not a group of people
    ("How many people should get the vaccine?", "much"),  # a figure first
    ("How old should a child be for a booster seat?", "much"),
])
def test_other_questions_about_people_are_not_who_parts(part, kind):
    assert part_kind(part) == kind


@pytest.mark.parametrize(("part", "sentence", "answers"), [
    ("Who should get it?", RECOMMENDED, True),
    ("Who should get it?", "It is also advised for adults 19 and older who have weakened immune systems.", True),
    # People and an age, but no one says they should: a trial's participants.
    ("Who should get it?", "In its main trial of 38,546 adults aged 60 and older, it cut cases by 51 percent.", False),
    # A cue, and a noun for a person, but no people: "should" alone.
    ("Who should get it?", "The vaccine should be stored in a fridge.", False),
    ("Who is most at risk?", "Older adults and infants are at higher risk of heat stroke.", True),
    ("Who is most at risk?", "Heat stroke is recommended reading for coaches.", False),  # a cue of the other ask
    ("哪些人应该接种流感疫苗", "建议孕妇、6月龄至5岁儿童和60岁以上老年人优先接种。", True),
    ("哪些人应该接种流感疫苗", "对于65岁及以上的老年人，流感疫苗的保护效果约为50%。", False),  # no one says they should
    ("哪些人应该接种流感疫苗", "流感疫苗需要每年接种，建议在10月底前完成。", False),  # a cue, no people
])
def test_a_sentence_answers_a_who_part_where_it_names_people_who_should(part, sentence, answers):
    unit = asked_unit(part)
    assert unit is not None
    assert (unit.search(sentence) is not None) is answers


WORDS = ["the", "vaccine", "trial", "dose", "protection", "was", "percent", "adults", "aged", "50", "older",
         "patients", "in", "years", "given", "immune", "people", "children", "efficacy", "fell"]


@settings(deadline=None)  # no timing: the machine may be loaded
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=25))
def test_without_a_cue_no_sentence_says_who_should(words):
    # People, ages and figures in any order: without "recommended", "should" or "eligible" no one is told to.
    unit = asked_unit("Who should get the vaccine?")
    assert unit is not None
    assert unit.search(" ".join(words).capitalize() + ".") is None


def _ranked(*texts: str) -> list[RankedSentence]:
    return [RankedSentence(text, i + 1, 1.0 - i / 10, i) for i, text in enumerate(texts)]


def test_answer_up_brings_the_best_answer_into_the_shown_sentences():
    ranked = _ranked("Trials enrolled 29,000 adults.", "Two doses are given.", "It contains no live virus.",
                     RECOMMENDED, "It is also sold in Canada.")
    unit = asked_unit("Who should get it?")
    assert unit is not None

    def answers(text: str) -> bool:
        return unit.search(text) is not None

    up = answer_up(ranked, 3, answers=answers, names_subject=lambda r: True)
    assert [r.text for r in up[:3]] == ["Trials enrolled 29,000 adults.", "Two doses are given.", RECOMMENDED]
    assert sorted(r.text for r in up) == sorted(r.text for r in ranked)  # nothing lost, nothing twice
    # Not where the sentence does not name the subject itself, nor where a shown one answers already.
    assert answer_up(ranked, 3, answers=answers, names_subject=lambda r: False) == ranked
    assert answer_up(ranked, 4, answers=answers, names_subject=lambda r: True) == ranked


EFFICACY = FakePage(
    "https://example.org/zoster-efficacy", "Shingles vaccine efficacy in the trials",
    "The shingles vaccine cut shingles by 97 percent in the first trial. "
    "The shingles vaccine trial enrolled 15,000 adults aged 50 and older in 18 countries. "
    "In the second shingles vaccine trial, adults aged 70 and older were protected 91 percent. "
    "The shingles vaccine is given as two doses, two to six months apart. "
    "Shingles vaccine protection stays high for years.",
)
SCHEDULE = FakePage(
    "https://example.org/adult-schedule", "Adult immunization schedule: what changed",
    "Each year the committee publishes the vaccines recommended for adults, covering influenza and others. "
    "For shingles, the shingles vaccine is recommended for all adults aged 50 and older. "
    "Influenza vaccines are given every autumn. Pneumococcal vaccines are given at 65.",
)


def test_the_answer_to_who_should_get_it_names_who_should():
    question = "How well does the shingles vaccine work, and who should get it?"
    ctx = FakeContext(question=question, pages=[EFFICACY, SCHEDULE])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=3)
    who = next(s for s in plan.steps if part_kind(s.title) == "who")
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    by_step = {r.step_id: r for r in results}
    shown = [s["text"] for s in by_step[who.id].notes["sentences"][: engine.sentences_per_step]]
    assert any("recommended for all adults aged 50" in text for text in shown), shown
    report = engine.report(ctx, plan, results, style="report", on_delta=lambda piece: None)
    answer = report.split("## Answer", 1)[1].split("\n## ", 1)[0]
    part = answer.split(who.title, 1)[1]
    first = next(line for line in part.splitlines()[1:] if line.strip())
    assert "recommended for all adults aged 50" in first, answer


def test_a_part_no_source_answers_never_takes_a_sentence_another_part_shows():
    from research.agents.engines.offline.write import _assign
    from research.agents.types import StepResult

    shared = {"text": RECOMMENDED, "source": 2, "score": 1.0}
    only_first = {"text": "The trial ran in 18 countries.", "source": 1, "score": 0.9}
    unanswered = StepResult(step_id="s1", title="How well does it work", report_md="",
                            notes={"sentences": [shared, only_first], "unanswered": "How well does it work"})
    who = StepResult(step_id="s2", title="Who should get it", report_md="", notes={"sentences": [shared]})
    first, second = _assign([unanswered, who], 4, first={0, 1})
    assert second == [shared]  # shown under the part it answers, not hidden under a part that says "no source"
    assert first == [only_first]  # what no other step ranked stays with it (for the key findings)


# ---------------------------------------------------------------- the signs of an illness, a drug's side effects

@pytest.mark.parametrize(("part", "kind"), [
    ("What are the warning signs of a heart attack in women?", "signs"),
    ("What are the side effects of statins?", "signs"),
    ("What symptoms does long COVID cause?", "signs"),
    ("How many people have symptoms?", "much"),  # a figure first
])
def test_a_part_that_asks_for_signs_is_a_signs_part(part, kind):
    assert part_kind(part) == kind


@pytest.mark.parametrize(("sentence", "answers"), [
    ("Women more often describe shortness of breath, nausea, and pain in the jaw.", True),
    ("Common side effects include headaches, dizziness and palpitations.", True),
    ("Chest pain or pressure is still the most common symptom.", False),  # one symptom; "symptom" names none
    ("Cardiologists advise women to treat these symptoms seriously.", False),
    ("The jaw and the neck are supplied by the same nerves.", False),  # parts of the body are no symptoms
])
def test_a_sentence_answers_a_signs_part_where_it_names_two_symptoms(sentence, answers):
    unit = asked_unit("What are the warning signs of a heart attack?")
    assert unit is not None
    assert (unit.search(sentence) is not None) is answers


MI_WOMEN = FakePage(
    "https://example.org/mi-women", "Heart attack in women: what is different",
    "A heart attack is the leading cause of death for women, yet women often miss their own heart attack symptoms. "
    "Heart attack symptoms in women are easy to mistake for flu, women say. "
    "Chest pain is the most common heart attack symptom in women and in men. "
    "Women more often describe shortness of breath, nausea and pain in the jaw during a heart attack. "
    "Women wait longer than men before calling for help.",
)


def test_the_answer_to_the_warning_signs_names_the_signs():
    # The page's sentence that names the signs shares fewer words with the part than three that say "symptoms":
    # past the cap of three sentences a page, it was never ranked.
    question = "What are the warning signs of a heart attack in women, and how soon should treatment start?"
    ctx = FakeContext(question=question, pages=[MI_WOMEN])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=3)
    signs = next(s for s in plan.steps if part_kind(s.title) == "signs")
    result = engine.research(ctx, signs, plan, [])
    shown = [s["text"] for s in result.notes["sentences"][: engine.sentences_per_step]]
    assert any("shortness of breath" in text for text in shown), shown


def test_where_the_pages_agree_on_little_the_subject_is_the_subject_model_s_not_the_first_word():
    # One page: the pages share nothing yet, so the subject falls back to one term. It was the question's
    # first word, "warning", and no sentence without "warning" was on the subject.
    from research.agents.engines.offline.read import about_subject
    from research.agents.types import SourceRef

    page = SourceRef(1, MI_WOMEN.url, MI_WOMEN.title, MI_WOMEN.text)
    check = about_subject("What are the warning signs of a heart attack in women?", "en-US", [page])
    assert check({"text": "Chest pain is the most common heart attack symptom in women and in men.", "source": 1})
