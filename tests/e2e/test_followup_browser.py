"""Report → follow-up → new version in the browser (JS on): the answer arrives live, cites the job's
sources, and folds into a new report version."""

from __future__ import annotations

import re

import pytest

from research.jobs.models import JobStatus, ResearchJob
from tests.e2e.conftest import sign_in, submit_offline_job
from tests.e2e.test_clarify_browser import _shot
from tests.support.citecheck import check_citations, report_sources

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_followup_then_fold_into_a_new_version(page, dora, asgi_server, worker, live_settings):
    base = asgi_server.url
    sign_in(page, base)
    job_id = submit_offline_job(page, base, "How have solar power costs changed?")
    page.wait_for_selector("#job[data-status='done']", timeout=120_000)
    page.wait_for_selector("#followup-form")

    page.fill("#followup-question", "How fast did solar module prices fall?")
    page.click("#followup-submit")
    # The answer arrives over the socket and the panel re-renders with it.
    page.wait_for_selector("#followup-1.followup-done .followup-answer", timeout=90_000)
    answer_text = page.inner_text("#followup-1 .followup-answer")
    assert re.search(r"\[\d+\]", answer_text), answer_text  # cited
    # Its [n] link to its own references list, not the report's, and no id is used twice on the page.
    links = page.eval_on_selector_all(
        "#followup-1 a.cite",
        "els => els.map(a => { const t = document.getElementById(a.getAttribute('href').slice(1));"
        " return !!t && !!t.closest('#followup-1'); })")
    assert links and all(links), links
    ids = page.eval_on_selector_all("[id]", "els => els.map(e => e.id)")
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    job = ResearchJob.objects.get(pk=job_id)
    followup = job.followups.get(number=1)
    sources = {s.number: s.text for s in job.sources.all()}
    assert check_citations(followup.answer, sources) == []
    page.screenshot(path=str(_shot("followup-answer")), full_page=True)

    page.click("#followup-fold-1")
    page.wait_for_selector("#report-card h2 small:has-text('v2')", timeout=60_000)
    page.wait_for_selector("#job[data-status='done']", timeout=60_000)
    report = page.inner_text("#report")
    assert "How fast did solar module prices fall?" in report
    job.refresh_from_db()
    latest = job.report_versions.latest("number")
    assert latest.number == 2 and "## How fast did solar module prices fall?" in latest.markdown
    assert check_citations(latest.markdown, report_sources(latest.markdown, job.sources.all())) == []
    assert job.followups.get(number=1).folded_into == 2
    assert job.status == JobStatus.DONE
    page.screenshot(path=str(_shot("followup-folded")), full_page=True)
