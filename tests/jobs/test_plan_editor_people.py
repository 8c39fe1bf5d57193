"""Issue 33, "A plan editor for people": no internal ids on screen; dependencies are chosen by step title
(the posted value is still the step ids, so the plan contract is unchanged)."""

from __future__ import annotations

import lxml.html
import pytest

from research.agents.types import Plan, PlanStep
from research.jobs import dispatch, selectors, services
from research.jobs.models import ResearchJob
from tests.support.jobs import TO_REVIEW, job_walk

TITLES = ["What do heat pumps cost?", "How efficient are they in winter?", "Compare the two"]


@pytest.fixture
def review_job(alice, monkeypatch) -> ResearchJob:
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="Are heat pumps worth it?", options={"engine": "offline"})
    steps = [PlanStep(id=f"step-{i}", title=t, description="", step_type="research", need_search=True,
                      depends_on=[]) for i, t in enumerate(TITLES, 1)]
    steps[2].depends_on = ["step-1"]
    job_walk(job, *TO_REVIEW[:2])
    services.plan_version_create(job=job, plan=Plan(locale="en-US", title="Heat pumps", thought="", steps=steps),
                                 author="planner")
    job_walk(job, TO_REVIEW[2])
    return job


def _editor(html: str):
    return lxml.html.fromstring(html).xpath("//*[@id='plan-editor']")[0]


def test_no_ids_on_screen_and_dependencies_by_title(alice_client, review_job):
    editor = _editor(alice_client.get(f"/jobs/{review_job.pk}/").content.decode())
    text = editor.text_content()
    assert "step-1" not in text and "Depends on (ids" not in text and "Id" not in text.split()
    ids = editor.xpath(".//input[substring(@name, string-length(@name) - 2) = '-id']")
    assert [i.get("type") for i in ids] == ["hidden"] * 3  # kept, for the contract, but not shown
    third = editor.xpath(".//li[contains(@class, 'plan-step')]")[2]
    labels = [lab.text_content().strip() for lab in third.xpath(".//label[contains(@class, 'step-dep')]")]
    assert labels == [f"1. {TITLES[0]}", f"2. {TITLES[1]}"]  # the other steps, by title
    checked = third.xpath(".//label[contains(@class, 'step-dep')]/input[@checked]/@value")
    assert checked == ["step-1"]


def _post(client, job, extra=None, deps2=("step-1", "step-2")):
    data = {"base_version": "1", "title": "Heat pumps", "form-TOTAL_FORMS": "3", "form-INITIAL_FORMS": "3",
            "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "50"}
    for i, t in enumerate(TITLES):
        data.update({f"form-{i}-id": f"step-{i + 1}", f"form-{i}-title": t, f"form-{i}-description": "",
                     f"form-{i}-step_type": "research", f"form-{i}-need_search": "on"})
    data["form-2-depends_on"] = list(deps2)  # two ticked boxes post the field twice
    data.update(extra or {})
    return client.post(f"/jobs/{job.pk}/plan/", data)


def test_ticked_titles_become_depends_on_ids(alice_client, review_job):
    assert _post(alice_client, review_job, {"op": "accept"}).status_code == 302
    plan = selectors.plan_accepted(job=review_job)
    assert plan is not None
    assert Plan.model_validate(plan.plan).steps[2].depends_on == ["step-1", "step-2"]


def test_move_keeps_every_ticked_dependency(alice_client, review_job):
    html = _post(alice_client, review_job, {"op": "up-2"}).content.decode()
    moved = _editor(html).xpath(".//li[contains(@class, 'plan-step')]")[1]
    assert moved.xpath(".//input[contains(@name, '-title')]/@value") == [TITLES[2]]
    assert sorted(moved.xpath(".//label[contains(@class, 'step-dep')]/input[@checked]/@value")) == ["step-1",
                                                                                                     "step-2"]


def test_a_cycle_is_named_by_titles(alice_client, review_job):
    html = _post(alice_client, review_job, {"op": "accept", "form-0-depends_on": "step-3"},
                 deps2=("step-1",)).content.decode()
    errors = lxml.html.fromstring(html).xpath("//*[@id='plan-errors']")[0].text_content()
    assert "cycle" in errors and f"“{TITLES[0]}”" in errors and "step-1" not in errors
