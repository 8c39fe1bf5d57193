"""JS on: the report editor previews live, flags unknown [n] before saving, and versions open, diff and restore."""

from __future__ import annotations

import re

import pytest

from research.jobs.models import JobStatus, ResearchJob
from tests.e2e.conftest import sign_in, submit_offline_job
from tests.e2e.test_clarify_browser import _shot
from tests.integration.helpers import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_report_edit_preview_citations_versions(page, dora, asgi_server, worker, live_settings):
    base = asgi_server.url
    sign_in(page, base)
    job_id = submit_offline_job(page, base, "Why did solar get cheaper?")
    job = wait_for(ResearchJob.objects.get(pk=job_id), {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    original = job.report_versions.get(number=1).markdown
    page.goto(base + f"/jobs/{job_id}/")
    check = page.inner_text("#report-check")  # the claim check's counts, for the version shown
    counts = re.search(r"Claim check: (\d+) of (\d+) cited claims found in their sources", check)
    assert counts and int(counts.group(2)) > 0 and counts.group(1) == counts.group(2), check

    page.goto(base + f"/jobs/{job_id}/report/edit/")
    area = page.locator("textarea[name=markdown]")
    area.fill("# Edited title\n\nA claim with a made-up source [99].\n")
    page.wait_for_selector("#report-preview h1:has-text('Edited title')")  # live preview
    page.wait_for_selector("#citation-problem", state="visible")  # flagged while typing
    assert "[99]" in page.inner_text("#citation-problem")
    page.click("#save-report")
    page.wait_for_selector("#citation-problem", state="visible")
    assert job.report_versions.count() == 1  # refused: nothing saved, the text is still there
    assert "[99]" in area.input_value()
    area.fill("# Edited title\n\nA claim with a real source [1].\n")
    page.wait_for_selector("#citation-problem", state="hidden")
    page.click("#save-report")
    page.wait_for_url(re.compile(rf".*/jobs/{job_id}/$"))
    assert job.report_versions.count() == 2
    # Its source does not say that: marked in the text, counted under the heading.
    page.wait_for_selector("#report-check:has-text('marked unverified: 1')")
    assert "Claim check: 0 of 1 cited claims" in page.inner_text("#report-check")
    assert "(unverified)" in page.inner_text("#report")
    page.screenshot(path=str(_shot("report-edit-check")), full_page=True)
    # Open v1, see what changed, restore it.
    page.goto(base + f"/jobs/{job_id}/report/edit/")
    page.click("#report-versions a.open-version")
    diff = page.inner_text("#report-diff")
    assert "+# Edited title" in diff and "-" + original.splitlines()[0] in diff
    page.click("#restore-version")
    page.wait_for_url(re.compile(rf".*/jobs/{job_id}/$"))
    latest = ResearchJob.objects.get(pk=job_id).report_versions.order_by("-number").first()
    assert latest.number == 3 and latest.markdown == original.replace("\r\n", "\n")
