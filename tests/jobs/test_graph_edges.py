"""Edges of the declared job graph (research/jobs/states.py GRAPH) that no other test takes, each taken
in-process through the production code that takes it: the stage handlers of job_advance, the services,
the stage lease's give-up and the render unit. job_walk only sets up the status before the edge.

The broker is replaced by a list of the units that would be sent; `drain` runs them inline. The model
double (tests/support/fake_llm.py) answers the LLM engine's coordinator; the other jobs use the offline
engine against the test site.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from research.agents.engines.offline.engine import OfflineEngine
from research.agents.types import Plan, PlanStep
from research.jobs import conversation, services
from research.jobs.models import JobStatus, OutputRender, OutputStatus, ResearchJob, StepStatus
from research.jobs.units import stages
from tests.support.inline_units import drain, inline_broker
from tests.support.jobs import TO_REVIEW, job_walk

S = JobStatus


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    return inline_broker(monkeypatch)


def events(job: ResearchJob, type_: str) -> list[dict[str, Any]]:
    return [e.payload for e in job.events.filter(type=type_).order_by("seq")]


def moves(job: ResearchJob) -> list[str]:
    """The statuses the job went through, in order, as its event log shows them."""
    return [p["status"] for p in events(job, "job.status")]


def follows(seen: list[str], a: str, b: str) -> bool:
    return any(x == a and y == b for x, y in zip(seen, seen[1:], strict=False))


@pytest.fixture
def planner_calls(monkeypatch) -> list[dict[str, Any]]:
    """Record what the offline planner is handed (it still plans as it would)."""
    calls: list[dict[str, Any]] = []
    original = OfflineEngine.plan

    def plan(self, ctx, **kwargs):
        calls.append(kwargs)
        return original(self, ctx, **kwargs)

    monkeypatch.setattr(OfflineEngine, "plan", plan)
    return calls


def offline_job(user, question: str = "How do heat pumps work?", **options: Any) -> ResearchJob:
    return services.job_create(user=user, question=question, options={"engine": "offline", **options})


# --- background investigation: coordinating -> investigating -> planning ------------------------------


def test_background_search_runs_before_the_planner_and_reaches_it(alice, sent, live_settings, planner_calls):
    job = offline_job(alice, background=True, max_steps=2)
    stages.job_advance(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == S.AWAITING_REVIEW, job.error
    seen = moves(job)
    assert follows(seen, S.COORDINATING, S.INVESTIGATING) and follows(seen, S.INVESTIGATING, S.PLANNING)
    background = job.options["background_text"]
    assert background.startswith("- ") and len(background) <= 6000  # the test site's hits, one per line
    assert planner_calls and planner_calls[-1]["background"] == background
    assert not [e for e in events(job, "step.activity") if e.get("kind") == "background_failed"]
    assert job.plan_versions.count() == 1


def test_a_failing_background_search_is_shown_and_planning_goes_on(alice, sent, settings, planner_calls):
    # No test site: the search provider's port is closed (tests/envsetup.py), so every provider fails.
    settings.SEARCH_PROVIDERS = ["searxng"]
    job = offline_job(alice, background=True, max_steps=2)
    stages.job_advance(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == S.AWAITING_REVIEW, job.error
    assert follows(moves(job), S.INVESTIGATING, S.PLANNING)
    failed = [e for e in events(job, "step.activity") if e.get("kind") == "background_failed"]
    assert len(failed) == 1 and "search failed" in failed[0]["error"]
    assert job.options["background_text"] == ""
    assert planner_calls and planner_calls[-1]["background"] == ""


# --- a plan with enough context goes straight to the reporter -----------------------------------------


def test_an_auto_accepted_plan_with_enough_context_skips_the_steps(alice, sent, live_settings, monkeypatch):
    original = OfflineEngine.plan

    def plan(self, ctx, **kwargs):  # the planner (the model's stand-in) says the context suffices
        return original(self, ctx, **kwargs).model_copy(update={"has_enough_context": True})

    monkeypatch.setattr(OfflineEngine, "plan", plan)
    job = offline_job(alice, auto_accept=True, max_steps=2)
    stages.job_advance(job_id=job.pk)
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.DONE, job.error
    assert follows(moves(job), S.PLANNING, S.REPORTING)
    assert S.RESEARCHING not in moves(job)
    accepted = events(job, "plan.accepted")
    assert len(accepted) == 1 and accepted[0]["steps"]
    assert not job.steps.filter(status=StepStatus.DONE).exists()  # no step ran
    assert job.report_versions.count() == 1 and job.artifacts.filter(kind="md").exists()
    assert events(job, "report.started")[0]["steps"] == 0


def test_accepting_a_plan_marked_enough_context_writes_the_report_at_once(alice, sent, live_settings):
    job = offline_job(alice)
    job_walk(job, *TO_REVIEW)
    planned = Plan(title="Heat pumps", steps=[PlanStep(id="a", title="How heat pumps work")])
    version = services.plan_version_create(job=job, plan=planned, author="planner")
    edited = planned.model_copy(update={"has_enough_context": True})  # the reviewer ticks "enough context"
    sent.clear()
    services.plan_submit(job=job, plan=edited, base_version=version.number, action="accept")
    job.refresh_from_db()
    assert job.status == S.REPORTING
    assert sent == [("advance", job.pk)]
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.DONE, job.error
    assert follows(moves(job), S.AWAITING_REVIEW, S.REPORTING)
    assert job.plan_versions.get(accepted=True).plan["has_enough_context"] is True
    assert job.report_versions.count() == 1


# --- stages that fail: the lease given up, a stage that raises ---------------------------------------


@pytest.mark.parametrize("status", [S.INVESTIGATING, S.REPORTING])
def test_a_stage_whose_worker_kept_dying_is_given_up(alice, sent, status):
    job = offline_job(alice, background=True)
    path = {S.INVESTIGATING: (S.COORDINATING, S.INVESTIGATING),
            S.REPORTING: (*TO_REVIEW, S.REPORTING)}[status]
    job_walk(job, *path)
    # Claimed STEP_MAX_ATTEMPTS times already, its lease lapsed: the next claim gives up.
    ResearchJob.objects.filter(pk=job.pk).update(stage_attempts=settings.STEP_MAX_ATTEMPTS, stage_lease_until=None)
    sent.clear()
    stages.job_advance(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == S.FAILED
    assert follows(moves(job), status, S.FAILED)
    reason = f"The {status} stage was interrupted {settings.STEP_MAX_ATTEMPTS} times"
    assert reason in job.error
    assert [e["error"] for e in events(job, "job.failed")] == [job.error]
    assert sent == []  # nothing runs it again


def test_a_reporter_that_writes_nothing_fails_the_job_with_the_reason(alice, sent, live_settings, monkeypatch):
    monkeypatch.setattr(OfflineEngine, "report", lambda self, *a, **k: "  \n")
    job = offline_job(alice)
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(
        job=job, plan=Plan(title="P", has_enough_context=True, steps=[PlanStep(id="a", title="A")]),
        author="planner")
    services.plan_start(job=job, version=version)
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.FAILED
    assert follows(moves(job), S.REPORTING, S.FAILED)
    assert job.error == "reporting failed: the reporter wrote an empty report"
    assert [e["error"] for e in events(job, "job.failed")] == [job.error]
    assert not job.report_versions.exists()


# --- renders ------------------------------------------------------------------------------------------


def reported_job(user, sent, outputs: list[str]) -> ResearchJob:
    """A job whose report was written and whose outputs were queued (the report stage's own path)."""
    job = offline_job(user, outputs=outputs)
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(
        job=job, plan=Plan(title="P", has_enough_context=True, steps=[PlanStep(id="a", title="A")]),
        author="planner")
    services.plan_start(job=job, version=version)
    sent.clear()
    stages.job_advance(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == S.RENDERING, job.error
    return job


def test_a_failed_render_fails_the_job_with_its_reason(alice, sent, live_settings, monkeypatch):
    from research.render import pdf

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(pdf, "render_pdf", broken)
    job = reported_job(alice, sent, ["md", "pdf"])
    assert sent == [("render", job.pk, "pdf")]
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.FAILED
    assert follows(moves(job), S.RENDERING, S.FAILED)
    row = OutputRender.objects.get(job=job, kind="pdf")
    assert row.status == OutputStatus.FAILED and "No space left on device" in row.error
    assert events(job, "artifact.failed") == [{"kind": "pdf", "error": row.error}]
    assert job.error == f"pdf failed: {row.error}"
    assert [e["error"] for e in events(job, "job.failed")] == [job.error]
    assert job.report_versions.count() == 1  # the report is kept; retry renders again


def test_retrying_a_job_cancelled_while_rendering_renders_again(alice, sent, live_settings):
    job = reported_job(alice, sent, ["md", "pdf"])
    services.job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == S.CANCELLED
    sent.clear()
    services.job_retry(job=job)
    job.refresh_from_db()
    assert job.status == S.RENDERING and not job.cancel_requested
    assert follows(moves(job), S.CANCELLED, S.RENDERING)
    assert sent == [("render", job.pk, "pdf")]
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.DONE, job.error
    assert job.artifacts.filter(kind="pdf").exists()
    assert job.report_versions.count() == 1  # the report was not written again


def test_retrying_a_job_cancelled_while_researching_runs_its_steps(alice, sent, live_settings):
    job = offline_job(alice)
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(
        job=job, plan=Plan(title="Heat pumps", steps=[PlanStep(id="a", title="How heat pumps work")]),
        author="planner")
    services.plan_start(job=job, version=version)
    services.job_cancel(job=job)  # no step runs yet: cancelled at once
    job.refresh_from_db()
    assert job.status == S.CANCELLED
    assert job.steps.get().status == StepStatus.CANCELLED
    sent.clear()
    services.job_retry(job=job)
    job.refresh_from_db()
    assert job.status == S.RESEARCHING
    assert follows(moves(job), S.CANCELLED, S.RESEARCHING)
    assert job.steps.get().status == StepStatus.PENDING
    assert sent == [("schedule", job.pk)]
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.DONE, job.error
    assert job.steps.get().status == StepStatus.DONE
    assert job.report_versions.count() == 1


# --- the conversation: clarifications and "research it anyway" ---------------------------------------


def test_answered_clarifications_go_to_the_background_search(alice, sent, live_settings, fake_llm):
    job = services.job_create(user=alice, question="Tell me about batteries",
                              options={"engine": "llm", "max_steps": 2, "background": True})
    stages.job_advance(job_id=job.pk)  # the model double's coordinator asks
    job.refresh_from_db()
    assert job.status == S.AWAITING_CLARIFICATION, job.error
    questions = job.options["clarify_questions"]
    sent.clear()
    conversation.clarification_answer(job=job, answers=["Germany"])
    job.refresh_from_db()
    assert job.status == S.INVESTIGATING
    assert follows(moves(job), S.AWAITING_CLARIFICATION, S.INVESTIGATING)
    assert sent == [("advance", job.pk)]
    before = len(fake_llm.requests)
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.AWAITING_REVIEW, job.error
    assert follows(moves(job), S.INVESTIGATING, S.PLANNING)
    assert job.options["clarifications"][0] == {"question": questions[0], "answer": "Germany"}
    background = job.options["background_text"]
    assert background
    planner = [r for r in fake_llm.requests[before:] if "# Role: planner" in str(r)]
    assert planner and background.splitlines()[0] in str(planner[-1]["messages"])


def test_research_it_anyway_after_a_direct_answer_searches_first(alice, sent, live_settings, planner_calls):
    job = offline_job(alice, question="hello", background=True, max_steps=1)
    stages.job_advance(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == S.DONE and job.answer and not planner_calls  # answered directly
    conversation.job_research_anyway(job=job)
    job.refresh_from_db()
    assert job.status == S.INVESTIGATING and job.answer == ""
    assert follows(moves(job), S.DONE, S.INVESTIGATING)
    assert len(events(job, "job.research_anyway")) == 1
    drain(sent)
    job.refresh_from_db()
    assert job.status == S.AWAITING_REVIEW, job.error  # a plan to review, where a greeting was answered
    assert follows(moves(job), S.INVESTIGATING, S.PLANNING)
    # The background search ran for the question (the test site has no page on greetings: no hits).
    assert [e["query"] for e in events(job, "step.activity") if e.get("kind") == "search"] == ["hello"]
    assert "background_text" in job.options
    assert len(planner_calls) == 1 and planner_calls[0]["background"] == job.options["background_text"]
    assert job.options["direct_answer"] is False and job.plan_versions.count() == 1
