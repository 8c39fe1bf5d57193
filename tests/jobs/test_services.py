"""Services and selectors: validation, lifecycle, events, ownership."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from research.agents.types import Plan, PlanStep
from research.jobs import dispatch, selectors, services
from research.jobs.events import event_emit
from research.jobs.models import JobEvent, JobStatus, JobStep, PlanVersion, ResearchJob
from tests.support.jobs import TO_REVIEW, job_walk


@pytest.fixture(autouse=True)
def _no_enqueue(monkeypatch):
    """These tests run inside a rolled-back transaction; nothing is sent to a broker."""
    sent: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: sent.append(a))
    return sent


def make_job(user, **options) -> ResearchJob:
    return services.job_create(user=user, question="How cheap is solar power now?", options=options)


def test_job_create_stores_clean_options_and_first_event(alice):
    job = make_job(alice, outputs="pdf,podcast", style="news", max_steps=3)
    assert job.status == JobStatus.QUEUED
    assert job.options["outputs"] == ["md", "pdf", "podcast"]
    assert job.options["style"] == "news"
    assert sorted(job.renders.values_list("kind", flat=True)) == ["pdf", "podcast"]
    events = list(JobEvent.objects.filter(job=job))
    assert [(e.seq, e.type, e.payload["status"]) for e in events] == [(1, "job.status", "queued")]


@pytest.mark.parametrize(
    ("question", "options", "message"),
    [
        ("   ", {}, "type a question"),
        ("x" * 5000, {}, "too long"),
        ("ok?", {"style": "poem"}, "Unknown report style"),
        ("ok?", {"outputs": "pdf,exe"}, "Unknown output"),
        ("ok?", {"max_steps": 99}, "between 1 and"),
        ("ok?", {"max_steps": "many"}, "whole number"),
        ("ok?", {"engine": "gpt"}, "Unknown engine"),
        ("ok?", {"locale": "<script>"}, "Locale"),
        ("ok?", {"web": False}, "needs a knowledge base"),
    ],
)
def test_job_create_rejects_bad_input_clearly(alice, question, options, message):
    with pytest.raises(ValidationError) as exc:
        services.job_create(user=alice, question=question, options=options)
    assert message in " ".join(exc.value.messages)
    assert not ResearchJob.objects.exists()


def test_job_create_is_rate_limited(alice, settings):
    settings.JOB_CREATE_RATE = "2/h"
    make_job(alice)
    make_job(alice)
    with pytest.raises(services.RateLimited):
        make_job(alice)


def test_events_have_contiguous_sequence_numbers(alice, settings):
    settings.EVENTS_STRICT = False  # payloads of its own: about seqs, not the declarations
    job = make_job(alice)
    for i in range(5):
        event_emit(job_id=job.pk, type="step.activity", payload={"i": i})
    seqs = list(JobEvent.objects.filter(job=job).values_list("seq", flat=True))
    assert seqs == [1, 2, 3, 4, 5, 6]
    assert [e["seq"] for e in selectors.job_events_after(job_id=job.pk, after=3)] == [4, 5, 6]


def test_event_payload_secrets_are_redacted(alice, settings):
    settings.EVENTS_STRICT = False  # an undeclared type and payload of its own: about redaction
    job = make_job(alice)
    ev = event_emit(job_id=job.pk, type="x", payload={"api_key": "sk-123", "nested": {"Authorization": "Bearer y"}})
    assert ev.payload == {"api_key": "[redacted]", "nested": {"Authorization": "[redacted]"}}


def test_outsider_gets_404_from_selectors(alice, charlie):
    job = make_job(alice)
    with pytest.raises(Http404):
        selectors.job_get_for_user(user=charlie, job_id=job.pk)
    assert selectors.job_get_for_user(user=alice, job_id=job.pk) == job
    assert list(selectors.job_list_for_user(user=charlie)) == []
    assert not selectors.job_user_can_watch(user_id=charlie.pk, job_id=job.pk)
    assert selectors.job_user_can_watch(user_id=alice.pk, job_id=job.pk)


def test_cancel_queued_job_ends_it(alice):
    job = make_job(alice)
    services.job_cancel(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert job.events.filter(type="job.status", payload__status="cancelled").exists()
    with pytest.raises(services.InvalidAction):
        services.job_cancel(job=job)


def _awaiting_review(job: ResearchJob) -> PlanVersion:
    plan = Plan(title="Solar", steps=[PlanStep(id="a", title="Costs"), PlanStep(id="b", title="Outlook",
                                                                                depends_on=["a"])])
    version = services.plan_version_create(job=job, plan=plan, author="planner")
    job_walk(job, *TO_REVIEW)
    return version


def test_plan_accept_creates_exactly_the_accepted_steps(alice):
    job = make_job(alice)
    version = _awaiting_review(job)
    edited = Plan(title="Solar v2", steps=[PlanStep(id="b", title="Outlook first"), PlanStep(id="c", title="New")])
    accepted = services.plan_submit(job=job, plan=edited, base_version=version.number, action="accept")
    job.refresh_from_db()
    assert job.status == JobStatus.RESEARCHING
    assert accepted.number == 2 and accepted.author == "user" and accepted.accepted
    assert list(JobStep.objects.filter(job=job).values_list("step_id", "title")) == [
        ("b", "Outlook first"), ("c", "New")]


def test_stale_plan_form_is_refused(alice):
    job = make_job(alice)
    version = _awaiting_review(job)
    services.plan_version_create(job=job, plan=Plan.model_validate(version.plan), author="user")
    with pytest.raises(services.StalePlan):
        services.plan_submit(job=job, plan=Plan.model_validate(version.plan), base_version=version.number,
                             action="accept")
    assert not JobStep.objects.filter(job=job).exists()


def test_invalid_plan_is_refused_with_reasons(alice):
    job = make_job(alice)
    version = _awaiting_review(job)
    cyclic = Plan(title="x", steps=[PlanStep(id="a", title="A", depends_on=["b"]),
                                    PlanStep(id="b", title="B", depends_on=["a"])])
    with pytest.raises(ValidationError) as exc:
        services.plan_submit(job=job, plan=cyclic, base_version=version.number, action="accept")
    assert "cycle" in " ".join(exc.value.messages).lower()


def test_replan_needs_feedback_and_respects_the_limit(alice, settings):
    settings.JOB_MAX_REPLANS = 1
    job = make_job(alice)
    version = _awaiting_review(job)
    plan = Plan.model_validate(version.plan)
    with pytest.raises(ValidationError):
        services.plan_submit(job=job, plan=plan, base_version=version.number, action="replan", feedback=" ")
    services.plan_submit(job=job, plan=plan, base_version=version.number, action="replan", feedback="More data")
    job.refresh_from_db()
    assert job.status == JobStatus.PLANNING
    assert job.options["replan_feedback"] == "More data"
    services.job_set_status(job=job, status=JobStatus.AWAITING_REVIEW)
    with pytest.raises(ValidationError, match="limit"):
        services.plan_submit(job=job, plan=plan, base_version=version.number, action="replan", feedback="again")


def test_retry_keeps_done_steps_and_reruns_the_rest(alice, _no_enqueue):
    job = make_job(alice)
    version = _awaiting_review(job)
    services.plan_submit(job=job, plan=Plan.model_validate(version.plan), base_version=version.number,
                         action="accept")
    JobStep.objects.filter(job=job, step_id="a").update(status="done", result_md="ok [1]")
    JobStep.objects.filter(job=job, step_id="b").update(status="failed", error="boom", attempts=3)
    services.job_set_status(job=job, status=JobStatus.FAILED, error="Every step failed")
    _no_enqueue.clear()
    services.job_retry(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.RESEARCHING and job.error == ""
    steps = dict(JobStep.objects.filter(job=job).values_list("step_id", "status"))
    assert steps == {"a": "done", "b": "pending"}
    assert JobStep.objects.get(job=job, step_id="b").attempts == 0
    assert ("schedule", job.pk) in _no_enqueue
    with pytest.raises(services.InvalidAction):
        services.job_retry(job=job)


def test_delete_removes_job_and_files(alice, settings):
    from pathlib import Path

    from research.jobs.artifacts import artifact_save_bytes

    job = make_job(alice)
    artifact_save_bytes(job=job, kind="md", name="report.md", data=b"x")
    folder = Path(settings.MEDIA_ROOT) / "jobs" / str(job.pk)
    assert folder.is_dir()
    with pytest.raises(services.InvalidAction):
        services.job_delete(job=job)  # still queued
    services.job_cancel(job=job)
    job.refresh_from_db()
    services.job_delete(job=job)
    assert not ResearchJob.objects.filter(pk=job.pk).exists() and not folder.exists()


def test_report_edit_goes_through_the_citation_pass(alice):
    from research.jobs.models import Source

    job = make_job(alice)
    job_walk(job, JobStatus.COORDINATING, JobStatus.DONE)
    services.report_version_create(job=job, markdown="# R\n\nOld [1].\n", author="reporter")
    Source.objects.create(job=job, number=1, url="https://a.example/", title="A", kind="web",
                          text="Heat pumps move heat instead of making it.", text_hash="0" * 64)
    edited = ("# R\r\n\r\nHeat pumps move heat instead of making it [1]. Nobody read this [9].\r\n\r\n"
              "## References\r\n\r\n- [1] [A](https://a.example/)\r\n- [9] made up\r\n")
    md = services.report_edit(job=job, markdown=edited).markdown
    assert "\r" not in md and "made up" not in md and "[9]" not in md
    assert "Heat pumps move heat instead of making it [1]." in md
    assert md.rstrip().endswith("- [1] [A](https://a.example/)")
