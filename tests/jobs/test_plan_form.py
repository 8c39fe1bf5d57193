"""The plan editor: formset validation, the add/delete/move buttons, stale forms."""

from __future__ import annotations

import pytest

from research.agents.types import Plan, PlanStep
from research.jobs import dispatch, services
from research.jobs.models import JobStep
from research.jobs.web.forms import PlanStepFormSet, plan_rows_apply
from tests.support.jobs import TO_REVIEW, job_walk


def _data(steps: list[dict], **extra) -> dict:
    data = {"form-TOTAL_FORMS": str(len(steps)), "form-INITIAL_FORMS": str(len(steps)),
            "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "50", **extra}
    for i, step in enumerate(steps):
        for key, value in step.items():
            if key == "need_search":
                if value:
                    data[f"form-{i}-{key}"] = "on"
            else:
                data[f"form-{i}-{key}"] = value
    return data


def _step(sid: str, title: str = "A step", deps: str = "", step_type: str = "research") -> dict:
    return {"id": sid, "title": title, "description": "", "step_type": step_type, "need_search": True,
            "depends_on": deps}


def _errors(formset) -> str:
    return " ".join([*formset.non_form_errors(), *[str(f.errors) for f in formset.forms]])


def test_valid_plan_becomes_a_plan():
    formset = PlanStepFormSet(_data([_step("a"), _step("b", deps="a", step_type="processing")]))
    assert formset.is_valid(), _errors(formset)
    plan = formset.to_plan(title="T")
    assert [s.id for s in plan.steps] == ["a", "b"] and plan.steps[1].depends_on == ["a"]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([], "at least one step"),
        ([_step(f"s{i}") for i in range(4)], "at most 3 steps"),
        ([_step("a"), _step("a")], "unique"),
        ([_step("a", deps="zzz")], "There is no step zzz"),
        ([_step("a", deps="a")], "cannot depend on itself"),
        ([_step("a", deps="b"), _step("b", deps="a")], "cycle"),
        ([_step("a", title="")], "This field is required"),
        ([_step("bad id!")], "valid"),
    ],
)
def test_invalid_plans_get_clear_messages(steps, message):
    formset = PlanStepFormSet(_data(steps))
    formset.max_steps = 3
    assert not formset.is_valid()
    assert message.lower() in _errors(formset).lower()


def test_editor_buttons():
    rows = [_step("a"), _step("b", deps="a"), _step("c", deps="a, b")]
    assert [r["id"] for r in plan_rows_apply(rows, "up-2")] == ["a", "c", "b"]
    assert [r["id"] for r in plan_rows_apply(rows, "down-0")] == ["b", "a", "c"]
    assert [r["id"] for r in plan_rows_apply(rows, "up-0")] == ["a", "b", "c"]  # no-op at the top
    deleted = plan_rows_apply(rows, "delete-0")
    assert [r["id"] for r in deleted] == ["b", "c"]
    assert deleted[0]["depends_on"] == "" and deleted[1]["depends_on"] == "b"  # dangling deps dropped
    added = plan_rows_apply(rows, "add")
    assert len(added) == 4 and added[-1]["id"] == "step-4" and added[-1]["title"] == ""
    assert plan_rows_apply(rows, "delete-99") == rows


@pytest.fixture
def review_job(alice, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="q?", options={"max_steps": 4})
    plan = Plan(title="P", steps=[PlanStep(id="a", title="First"), PlanStep(id="b", title="Second")])
    services.plan_version_create(job=job, plan=plan, author="planner")
    job_walk(job, *TO_REVIEW)
    return job


def test_editor_button_redisplays_without_saving(alice_client, review_job):
    data = _data([_step("a", "First"), _step("b", "Second edited")], base_version="1", title="P", op="delete-0")
    response = alice_client.post(f"/jobs/{review_job.pk}/plan/", data)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Second edited" in body and 'value="First"' not in body
    assert review_job.plan_versions.count() == 1 and not JobStep.objects.filter(job=review_job).exists()


def test_accept_through_the_view_runs_the_edited_plan(alice_client, review_job):
    data = _data([_step("b", "Second"), _step("a", "First, renamed")], base_version="1", title="P2", op="accept")
    response = alice_client.post(f"/jobs/{review_job.pk}/plan/", data)
    assert response.status_code == 302
    assert list(JobStep.objects.filter(job=review_job).values_list("step_id", "title")) == [
        ("b", "Second"), ("a", "First, renamed")]
    assert review_job.plan_versions.get(number=2).accepted


def test_stale_form_is_refused_and_nothing_is_lost(alice_client, review_job):
    services.plan_version_create(job=review_job, plan=Plan(title="P", steps=[PlanStep(id="x", title="Other tab")]),
                                 author="user")
    data = _data([_step("a", "My edit")], base_version="1", title="P", op="accept")
    response = alice_client.post(f"/jobs/{review_job.pk}/plan/", data)
    assert response.status_code == 409
    body = response.content.decode()
    assert 'id="plan-stale-refused"' in body
    assert "My edit" in body  # the user's edits are still on the page
    assert not JobStep.objects.filter(job=review_job).exists()
    # The re-shown form is based on the newest version: accepting it again applies exactly what was typed.
    assert 'name="base_version" value="2"' in body
    response = alice_client.post(f"/jobs/{review_job.pk}/plan/", dict(data, base_version="2"))
    assert response.status_code == 302
    assert list(JobStep.objects.filter(job=review_job).values_list("title", flat=True)) == ["My edit"]


def test_plan_versions_can_be_viewed(alice_client, review_job):
    response = alice_client.get(f"/jobs/{review_job.pk}/plan/1/")
    assert response.status_code == 200 and "Second" in response.content.decode()
