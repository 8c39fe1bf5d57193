"""Report edits go through research.report.check before they are saved."""

from __future__ import annotations

import pytest

from research.jobs import services
from research.jobs.models import JobStatus, ResearchJob, Source

pytestmark = pytest.mark.django_db


def _done_job(alice) -> ResearchJob:
    """A finished job with one registered source [4] and a report citing it."""
    job = services.job_create(user=alice, question="What limits solid-state batteries?", options={"engine": "offline"})
    Source.objects.create(job=job, number=4, url="https://batteries.example/ssb", title="SSB",
                          text="Cells must be made in dry rooms.", text_hash="x")
    services.report_version_create(job=job, markdown="# R\n\nCells must be made in dry rooms [4].\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    return job


def test_report_edit_drops_unknown_citations_and_unregistered_links(alice):
    job = _done_job(alice)
    edited = (
        "# R\n\nCells must be made in dry rooms [4]. A [trial](https://elsewhere.example/t) says more [9].\n"
    )
    version = services.report_edit(job=job, markdown=edited)
    assert "[9]" not in version.markdown and "elsewhere.example" not in version.markdown
    assert "Cells must be made in dry rooms [1]." in version.markdown
    assert "- [1] [SSB](https://batteries.example/ssb)" in version.markdown
    event = job.events.filter(type="report.ready").order_by("-id").first()
    assert event is not None and event.payload["check"]["removed_links"] == 1
    assert event.payload["check"]["removed_citations"] == 1


def test_the_job_page_shows_the_claim_check_of_the_version_it_shows(alice, alice_client):
    job = _done_job(alice)
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="report-check"' not in page  # no check recorded for v1: nothing claimed
    services.report_edit(job=job, markdown=(
        "# R\n\nCells must be made in dry rooms [4]. Every maker halved the cost of its dry rooms within a year [4]."
        " See https://elsewhere.example/t for more.\n"
    ))
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    line = page.split('id="report-check">', 1)[1].split("</p>", 1)[0]
    assert "Claim check: 1 of 2 cited claims found in their sources" in line
    assert "marked unverified: 1" in line and "links to unretrieved pages removed: 1" in line
    assert "unsupported claims removed" not in line
    zh = alice_client.get(f"/jobs/{job.pk}/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "引用核查：2 处带引用的说法中有 1 处在其来源中找到" in zh


def test_a_report_that_cites_none_of_its_sources_says_so_on_the_job_page(alice, alice_client):
    # What a tiny real model wrote (make test-models): prose about the task, not one citation.
    job = services.job_create(user=alice, question="How have solar costs changed?", options={"engine": "offline"})
    for n in (1, 2):
        Source.objects.create(job=job, number=n, url=f"https://solar.example/{n}", title=f"S{n}", text="Costs fell.",
                              text_hash=str(n))
    services.report_version_create(job=job, markdown="# R\n\nOld.\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    services.report_edit(job=job, markdown="# R\n\nThe final report will be structured in the academic style.\n")
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    line = page.split('id="report-check">', 1)[1].split("</p>", 1)[0]
    assert "The report cites none of the 2 sources the research found" in line
    assert 'class="notice warn" id="report-check"' in page
