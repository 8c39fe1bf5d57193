"""Issue 33: offline plan steps are never broken at an "and" inside a clause."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from research.agents.engines.offline import OfflineEngine, question_aspects
from research.agents.engines.offline.titles import SUBORDINATORS, and_inside_a_clause, readable_steps
from research.agents.types import PlanStep
from tests.support.fake_context import FakeContext

BROKEN = "What decides a file's type when glob patterns and magic numbers disagree?"


def _plan(question: str, max_steps: int = 3) -> list[PlanStep]:
    return OfflineEngine().plan(FakeContext(question=question, pages=[], locale="en-US"), max_steps=max_steps).steps


def test_a_question_with_and_inside_a_when_clause_is_one_step():
    titles = [s.title for s in _plan(BROKEN)]
    # Issue 32: the question is not split at all now (one part), so its plan is a one-part question's
    # plan: the facets, as for "How efficient are heat pumps in cold climates?". Before, it was split
    # and then merged back into a step titled by the question.
    assert question_aspects(BROKEN, "en-US") == []
    assert titles == [s.title for s in _plan("How efficient are heat pumps in cold climates?")]
    assert not any(t.endswith("glob patterns") or "glob magic" in t for t in titles)
    assert [s.id for s in _plan(BROKEN)] == [f"step-{i}" for i in range(1, len(titles) + 1)]


def test_two_things_asked_are_still_two_steps():
    titles = [s.title for s in _plan("What limits solid-state battery production and safety?")]
    assert titles[:2] == ["What limits solid-state battery production", "What limits solid-state battery safety"]


def _step(i: int, title: str, deps: list[str] | None = None) -> PlanStep:
    return PlanStep(id=f"step-{i}", title=title, description=f"q{i}", step_type="research", need_search=True,
                    depends_on=deps or [])


_WORD = st.text(st.characters(whitelist_categories=("Ll",)), min_size=1, max_size=8)


@given(st.lists(_WORD, min_size=1, max_size=6), st.sampled_from(sorted(SUBORDINATORS)),
       st.lists(_WORD, min_size=1, max_size=3), st.lists(_WORD, min_size=1, max_size=3))
def test_split_parts_inside_a_clause_merge_back(lead, sub, left, right):
    question = " ".join(["what", *lead, sub, *left, "and", *right]) + "?"
    stem = " ".join(["what", *lead, sub])
    steps = [_step(1, f"{stem} {' '.join(left)}"), _step(2, f"{stem} {' '.join(right)}"),
             _step(3, "Outlook", ["step-2"])]
    assert and_inside_a_clause(question)
    out = readable_steps(steps, question=question, locale="en-US")
    assert [s.title for s in out] == [question.rstrip("?"), "Outlook"]
    assert [s.id for s in out] == ["step-1", "step-2"] and out[1].depends_on == []
    assert out[0].description == "q1 q2"


@given(st.lists(_WORD.filter(lambda w: w not in SUBORDINATORS and w not in ("and", "or")), min_size=1,
                max_size=8))
def test_questions_without_a_clause_are_left_alone(words):
    question = " ".join(["what", *words, "and", "cost"]) + "?"
    steps = [_step(1, " ".join(["what", *words])), _step(2, "what cost")]
    assert readable_steps(steps, question=question, locale="en-US") == steps
