"""The job page's buttons follow the services' rules (selectors.job_can), in a real browser with JS on: a job
waiting for clarifying answers offers Delete (the service always allowed it; the page used to hide it), and
the click deletes it."""

from __future__ import annotations

import pytest

from research.jobs import dispatch, services
from research.jobs.models import JobStatus, ResearchJob
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_job_awaiting_clarification_offers_delete_and_deleting_works(page, dora, asgi_server, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)  # no worker: the job stays where it is put
    job = services.job_create(user=dora, question="Tell me about batteries", options={"engine": "offline"})
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.AWAITING_CLARIFICATION,
                                                 options={**job.options, "clarify_questions": ["Which country?"]})
    base = asgi_server.url
    sign_in(page, base)
    page.goto(f"{base}/jobs/{job.pk}/")
    page.wait_for_selector("#clarify-form")
    assert page.locator("#cancel-job").count() == 1 and page.locator("#retry-job").count() == 0
    assert page.locator("#edit-report").count() == 0
    page.click("#delete-job")
    page.wait_for_url(base + "/")
    assert not ResearchJob.objects.filter(pk=job.pk).exists()
