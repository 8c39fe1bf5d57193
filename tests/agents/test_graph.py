"""The job graph's step part: scheduling, blocked steps, plan validation and repair.

The status transitions are tested in tests/jobs/test_states.py."""

from __future__ import annotations

import pytest

from research.agents.graph import (
    blocked_steps,
    effective_depends_on,
    find_cycle,
    normalize_plan,
    ready_steps,
    validate_plan,
)
from research.agents.types import Plan, PlanStep


def step(sid: str, *deps: str, step_type: str = "research") -> PlanStep:
    return PlanStep(id=sid, title=f"Step {sid}", step_type=step_type, depends_on=list(deps))


def plan_of(*steps: PlanStep) -> Plan:
    return Plan(title="A plan", steps=list(steps))


def test_research_steps_without_dependencies_run_in_parallel():
    steps = [step("s1"), step("s2"), step("s3")]
    assert ready_steps(steps, done_ids=[], running_ids=[]) == ["s1", "s2", "s3"]
    assert ready_steps(steps, done_ids=["s1"], running_ids=["s2"]) == ["s3"]
    assert ready_steps(steps, done_ids=["s1", "s2", "s3"], running_ids=[]) == []


def test_explicit_dependencies_are_waited_for():
    steps = [step("s1"), step("s2", "s1"), step("s3", "s1", "s2")]
    assert ready_steps(steps, [], []) == ["s1"]
    assert ready_steps(steps, ["s1"], []) == ["s2"]
    assert ready_steps(steps, ["s1", "s2"], []) == ["s3"]


def test_processing_step_without_dependencies_waits_for_the_steps_before_it():
    steps = [step("s1"), step("s2"), step("p", step_type="processing"), step("s4")]
    assert effective_depends_on(steps)["p"] == ["s1", "s2"]
    assert ready_steps(steps, [], []) == ["s1", "s2", "s4"]
    assert ready_steps(steps, ["s1"], ["s2", "s4"]) == []
    assert ready_steps(steps, ["s1", "s2"], ["s4"]) == ["p"]


def test_processing_step_with_explicit_dependencies_uses_only_those():
    steps = [step("s1"), step("s2"), step("p", "s2", step_type="processing")]
    assert ready_steps(steps, ["s2"], ["s1"]) == ["p"]


def test_ready_steps_accepts_plain_dicts():
    steps = [{"id": "a", "depends_on": []}, {"id": "b", "depends_on": ["a"], "step_type": "analysis"}]
    assert ready_steps(steps, [], []) == ["a"]
    assert ready_steps(steps, ["a"], []) == ["b"]


@pytest.mark.parametrize(
    ("failed", "pending", "blocked"),
    [
        ([], ["a", "b", "c", "d"], {}),
        (["a"], ["b", "c", "d"], {"b": "a", "c": "b", "d": "a"}),  # c is blocked through b; d waits for a and b
        (["b"], ["c", "d"], {"c": "b", "d": "b"}),
        (["b"], ["d"], {"d": "b"}),  # c is not pending (running or ended): not reported
        (["c"], ["d"], {}),
    ],
)
def test_blocked_steps_follow_failures_through_dependencies(failed, pending, blocked):
    steps = [step("a"), step("b", "a"), step("c", "b"), step("d", "a", "b")]
    assert blocked_steps(steps, failed_ids=failed, pending_ids=pending) == blocked


def test_validate_plan_accepts_a_good_plan():
    assert validate_plan(plan_of(step("s1"), step("s2"), step("s3", "s1", "s2")), max_steps=3) == []


def test_validate_plan_reports_each_problem():
    assert validate_plan(plan_of(), max_steps=3) == ["The plan needs at least one step."]
    too_many = validate_plan(plan_of(step("a"), step("b"), step("c")), max_steps=2)
    assert too_many == ["The plan has 3 steps; at most 2 are allowed."]
    dup = validate_plan(plan_of(step("a"), step("a")), max_steps=5)
    assert any("used more than once" in e for e in dup)
    unknown = validate_plan(plan_of(step("a", "zzz")), max_steps=5)
    assert unknown == ["Step 'a' depends on unknown step 'zzz'."]
    self_dep = validate_plan(plan_of(step("a", "a")), max_steps=5)
    assert self_dep == ["Step 'a' depends on itself."]
    cycle = validate_plan(plan_of(step("a", "c"), step("b", "a"), step("c", "b")), max_steps=5)
    assert len(cycle) == 1 and "cycle" in cycle[0] and "a" in cycle[0]


def test_find_cycle_returns_the_path():
    assert find_cycle({"a": ["b"], "b": ["a"]}) in (["a", "b", "a"], ["b", "a", "b"])
    assert find_cycle({"a": ["b"], "b": []}) == []
    assert find_cycle({"a": ["missing"]}) == []


def test_normalize_plan_repairs_ids_dependencies_cycles_and_length():
    messy = plan_of(
        step("s1", "s3"),  # cycle s1 -> s3 -> s2 -> s1
        step("s2", "s1", "s2", "nope"),  # self and unknown deps
        step("s3", "s2"),
        step("s1"),  # duplicate id
        step("weird id!"),
        step("s6"),
    )
    fixed = normalize_plan(messy, max_steps=5, locale="zh-CN")
    assert fixed.locale == "zh-CN"
    assert len(fixed.steps) == 5
    ids = [s.id for s in fixed.steps]
    assert len(set(ids)) == 5
    assert ids[3] == "s1-2" and ids[4] == "weird-id"
    assert validate_plan(fixed, max_steps=5) == []
    by_id = {s.id: s for s in fixed.steps}
    assert by_id["s2"].depends_on == ["s1"]  # self and unknown dropped, the real one kept
    assert by_id["s3"].depends_on == ["s2"]
    assert by_id["s1"].depends_on == []  # the earliest step of the cycle gave up its edge


def test_normalize_plan_drops_dependencies_on_clamped_steps():
    fixed = normalize_plan(plan_of(step("a", "c"), step("b"), step("c")), max_steps=2)
    assert [s.id for s in fixed.steps] == ["a", "b"]
    assert fixed.steps[0].depends_on == []


def test_normalize_plan_makes_processing_dependencies_explicit():
    fixed = normalize_plan(
        plan_of(step("a", "p"), step("b"), step("p", step_type="processing"), step("q", "a", step_type="processing")),
        max_steps=5,
    )
    by_id = {s.id: s for s in fixed.steps}
    assert by_id["p"].depends_on == ["b"]  # "a" waits for p itself, so it cannot come first
    assert by_id["q"].depends_on == ["a"]  # explicit dependencies are kept as written
    assert validate_plan(fixed, max_steps=5) == []
