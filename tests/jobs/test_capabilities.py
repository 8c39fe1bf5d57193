"""The job page's buttons and the services' checks come from one set of rules (selectors.job_can): for every
status, with and without a report, a button is on the page exactly when the service accepts the action.
Before, the page hid Delete for a job awaiting clarification while job_delete allowed it."""

from __future__ import annotations

import lxml.html
import pytest

from research.jobs import conversation, dispatch, selectors, services
from research.jobs.models import JobStatus, ReportVersion, ResearchJob

pytestmark = pytest.mark.django_db

# capability -> the element the page shows for it
BUTTONS = {
    "cancel": "cancel-job",
    "retry": "retry-job",
    "delete": "delete-job",
    "edit_report": "edit-report",
    "research_anyway": "research-anyway",
    "ask_followup": "followup-form",
}


def _do(action: str, job: ResearchJob) -> None:
    """Ask the service for the action; InvalidAction / StalePlan = refused by its rules."""
    if action == "cancel":
        services.job_cancel(job=job)
    elif action == "retry":
        services.job_retry(job=job)
    elif action == "delete":
        services.job_delete(job=job)
    elif action == "edit_report":
        services.report_edit_checked(job=job, markdown="An edit.\n")
    elif action == "rerender":
        services.output_rerender(job=job, kind="pdf")
    elif action == "research_anyway":
        conversation.job_research_anyway(job=job)
    elif action == "ask_followup":
        conversation.followup_ask(job=job, question="And then?")
    elif action == "answer_clarification":
        conversation.clarification_answer(job=job, answers=[], skip=True)
    else:
        raise AssertionError(action)


CASES = [(status, report) for status in JobStatus.values for report in (False, True)
         if report is False or status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.RENDERING)]


def _job(alice, status: str, report: bool) -> ResearchJob:
    job = services.job_create(user=alice, question="What limits heat pumps?", options={"engine": "offline",
                                                                                       "outputs": ["pdf"]})
    answer = "A short answer." if status == JobStatus.DONE and not report else ""
    ResearchJob.objects.filter(pk=job.pk).update(status=status, answer=answer)
    if report:
        ReportVersion.objects.create(job=job, number=1, author="reporter", markdown="# Heat pumps\n\nText.\n")
    job.refresh_from_db()
    return job


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)


@pytest.mark.parametrize(("status", "report"), CASES, ids=[f"{s}{'+report' if r else ''}" for s, r in CASES])
def test_the_page_shows_a_button_exactly_when_the_service_allows_it(alice, alice_client, status, report):
    job = _job(alice, status, report)
    can = selectors.job_can(job=job)
    page = lxml.html.fromstring(alice_client.get(f"/jobs/{job.pk}/").content)
    for capability, element in BUTTONS.items():
        shown = bool(page.get_element_by_id(element, None) is not None)
        assert shown == getattr(can, capability), (capability, status, report)
    for capability in ("cancel", "retry", "delete", "edit_report", "rerender", "research_anyway", "ask_followup",
                       "answer_clarification"):
        fresh = _job(alice, status, report)
        try:
            _do(capability, fresh)
            allowed = True
        except (services.InvalidAction, services.StalePlan):
            allowed = False
        assert allowed == getattr(can, capability), (capability, status, report)


def test_a_job_awaiting_clarification_shows_delete_and_can_be_deleted(alice, alice_client):
    job = _job(alice, JobStatus.AWAITING_CLARIFICATION, False)
    page = lxml.html.fromstring(alice_client.get(f"/jobs/{job.pk}/").content)
    assert page.get_element_by_id("delete-job", None) is not None
    assert alice_client.post(f"/jobs/{job.pk}/delete/").status_code == 302
    assert not ResearchJob.objects.filter(pk=job.pk).exists()
