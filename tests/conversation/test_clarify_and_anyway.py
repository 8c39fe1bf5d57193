"""Clarification and "research it anyway" through a real worker, the model double and the web views."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from research.jobs import conversation, services
from research.jobs.models import JobStatus
from tests.integration.helpers import assert_event_log_complete, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_options_default_clarify_on_for_the_model_only():
    assert services.job_options_clean({"engine": "llm"})["clarify"] is True
    assert services.job_options_clean({"engine": "auto"})["clarify"] is True
    assert services.job_options_clean({"engine": "offline"})["clarify"] is False
    assert services.job_options_clean({"engine": "llm", "clarify": False})["clarify"] is False
    assert services.job_options_clean({})["direct_answer"] is True


def test_vague_question_waits_for_answers_then_plans_with_them(alice, worker, live_settings, alice_client):
    job = services.job_create(user=alice, question="Tell me about batteries",
                              options={"engine": "llm", "max_steps": 3})
    job = wait_for(job, {JobStatus.AWAITING_CLARIFICATION, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.AWAITING_CLARIFICATION, job.error
    assert job.stage_lease_until is None  # nothing holds the job while it waits
    questions = job.options["clarify_questions"]
    assert 1 <= len(questions) <= 3
    asked = job.events.get(type="clarify.asked")
    assert asked.payload["questions"] == questions

    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="clarify-form"' in page and questions[0] in page
    # Answering nothing is refused and loses nothing.
    alice_client.post(f"/jobs/{job.pk}/clarify/", {"op": "answer", "answer_0": " "})
    job.refresh_from_db()
    assert job.status == JobStatus.AWAITING_CLARIFICATION

    response = alice_client.post(f"/jobs/{job.pk}/clarify/", {"op": "answer", "answer_0": "Germany",
                                                               "answer_1": "since 2015"})
    assert response.status_code == 302
    job = wait_for(job, {JobStatus.AWAITING_REVIEW, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.AWAITING_REVIEW, job.error
    assert job.options["clarifications"][0] == {"question": questions[0], "answer": "Germany"}
    titles = [s["title"] for s in job.plan_versions.get().plan["steps"]]
    assert any("Germany" in t for t in titles), titles  # the planner saw the answers
    # Asked once: answering again is refused.
    with pytest.raises(services.InvalidAction):
        conversation.clarification_answer(job=job, answers=["France"])
    assert_event_log_complete(job)


def test_skipping_the_questions_plans_from_the_question_as_written(alice, worker, live_settings):
    job = services.job_create(user=alice, question="Tell me about heat pumps",
                              options={"engine": "llm", "max_steps": 2})
    job = wait_for(job, {JobStatus.AWAITING_CLARIFICATION, JobStatus.FAILED}, worker=worker)
    with pytest.raises(ValidationError):
        conversation.clarification_answer(job=job, answers=["x" * 1001])
    conversation.clarification_answer(job=job, answers=[], skip=True)
    job = wait_for(job, {JobStatus.AWAITING_REVIEW, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.AWAITING_REVIEW, job.error
    assert job.options["clarify_skipped"] is True
    assert job.events.filter(type="clarify.answered", payload__skipped=True).count() == 1


def test_clarify_off_plans_at_once(alice, worker, live_settings):
    job = services.job_create(user=alice, question="Tell me about wind power",
                              options={"engine": "llm", "max_steps": 2, "clarify": False})
    job = wait_for(job, {JobStatus.AWAITING_REVIEW, JobStatus.AWAITING_CLARIFICATION, JobStatus.FAILED},
                   worker=worker)
    assert job.status == JobStatus.AWAITING_REVIEW


def test_direct_answer_then_research_it_anyway(alice, worker, live_settings, alice_client):
    job = services.job_create(user=alice, question="hello",
                              options={"engine": "llm", "max_steps": 2, "auto_accept": True})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE and job.answer and not job.report_versions.exists()
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="research-anyway"' in page
    assert alice_client.post(f"/jobs/{job.pk}/research-anyway/").status_code == 302
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert job.answer == "" and job.report_versions.count() == 1 and job.options["direct_answer"] is False
    assert job.artifacts.filter(kind="md").exists()
    # The button is gone once a report exists, and a second press is refused.
    assert 'id="research-anyway"' not in alice_client.get(f"/jobs/{job.pk}/").content.decode()
    with pytest.raises(services.InvalidAction):
        conversation.job_research_anyway(job=job)
    assert_event_log_complete(job)


def test_no_direct_answer_option_researches_a_greeting(alice, worker, live_settings, fake_llm):
    before = len(fake_llm.requests)
    job = services.job_create(user=alice, question="hello",
                              options={"engine": "llm", "max_steps": 2, "auto_accept": True,
                                       "direct_answer": False, "outputs": ["md", "pdf"]})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert not job.answer and job.report_versions.exists()
    coordinator = [r for r in fake_llm.requests[before:] if "# Role: coordinator" in str(r)]
    assert coordinator and "## Report expected\nyes" in str(coordinator[0]["messages"][-1]["content"])
