"""Follow-ups through a real worker: answered from the job's sources, a research round when they do not
cover the question, citations checked, folded into a new version that is re-rendered."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from research.jobs import conversation, dispatch, services
from research.jobs.models import FollowUp, JobStatus, OutputStatus
from tests.integration.helpers import assert_event_log_complete, wait_for
from tests.support.citecheck import check_citations, report_sources

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _wait_followup(followup: FollowUp, timeout: float = 120) -> FollowUp:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        followup.refresh_from_db()
        if followup.status in (OutputStatus.DONE, OutputStatus.FAILED):
            return followup
        time.sleep(0.2)
    raise AssertionError(f"follow-up stuck in {followup.status}")


def test_model_followup_cites_checked_sources_and_folds_into_a_rerendered_version(alice, worker, live_settings):
    job = services.job_create(user=alice, question="How have solar power costs changed?",
                              options={"engine": "llm", "auto_accept": True, "max_steps": 2, "clarify": False,
                                       "outputs": ["md", "pdf"]})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=240, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    with pytest.raises(ValidationError):
        conversation.followup_ask(job=job, question="  ")
    followup = _wait_followup(conversation.followup_ask(job=job, question="How fast did solar module prices fall?"))
    assert followup.status == OutputStatus.DONE, followup.error
    sources = {s.number: s.text for s in job.sources.all()}
    assert check_citations(followup.answer, sources) == []
    assert "[99]" not in followup.answer  # the model's bogus citation was removed
    done = job.events.get(type="followup.done")
    assert done.payload["removed_citations"] == 1 and done.payload["cited"]
    assert job.events.filter(type="followup.delta").exists()  # streamed

    number = conversation.followup_fold(job=job, number=1)
    assert number == 2
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    latest = job.report_versions.latest("number")
    assert "## How fast did solar module prices fall?" in latest.markdown
    assert latest.markdown.count("## References") == 1
    assert check_citations(latest.markdown, report_sources(latest.markdown, job.sources.all())) == []
    pdf = job.artifacts.get(kind="pdf")
    text = subprocess.run(["pdftotext", pdf.file.path, "-"], capture_output=True, text=True, check=True).stdout
    assert "How fast did solar module prices fall?" in text  # the outputs were re-rendered from v2
    assert Path(job.artifacts.get(kind="md").file.path).read_text() == latest.markdown
    with pytest.raises(services.InvalidAction):
        conversation.followup_fold(job=job, number=1)
    assert_event_log_complete(job)


def test_uncovered_question_runs_a_small_research_round(alice, worker, live_settings):
    job = services.job_create(user=alice, question="How have solar power costs changed?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 1})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    before = job.sources.count()
    followup = _wait_followup(conversation.followup_ask(job=job, question="How do heat pumps cope with cold climates?"))
    assert followup.status == OutputStatus.DONE, followup.error
    events = list(job.events.filter(type__startswith="followup").values_list("type", "payload"))
    assert followup.added_sources >= 1, events
    assert job.sources.count() == before + followup.added_sources
    assert job.events.filter(type="followup.activity", payload__kind="search").exists()
    sources = {s.number: s.text for s in job.sources.all()}
    assert check_citations(followup.answer, sources) == []


def test_followup_refused_before_the_report(alice, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="Heat pumps?", options={"engine": "offline"})
    with pytest.raises(services.InvalidAction):
        conversation.followup_ask(job=job, question="And in China?")
