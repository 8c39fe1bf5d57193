"""Issue 31 in a browser: an edit with a "Works Cited" list leaves one references list on the page; its
citation anchors jump to the app's list, no element id is doubled, and no link goes to a page no tool returned."""

from __future__ import annotations

import re

import pytest

from research.jobs import services
from research.jobs.models import JobStatus, ResearchJob, Source
from tests.e2e.conftest import sign_in
from tests.report.test_edit_form import BOILERS, PUMPS, SEEN

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_works_cited_edit_leaves_one_references_list_on_the_page(page, dora, asgi_server):
    job = services.job_create(user=dora, question="How efficient is home heating?", options={"engine": "offline"})
    Source.objects.create(job=job, number=4, url="https://a.example/boilers", title="Boilers", text=BOILERS,
                          text_hash="a")
    Source.objects.create(job=job, number=7, url="https://b.example/pumps", title="Pumps", text=PUMPS, text_hash="b")
    services.report_version_create(job=job, markdown=SEEN, author="reporter")
    job.renders.all().delete()  # no outputs to re-render: no worker needed
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    base = asgi_server.url
    sign_in(page, base)
    page.goto(base + f"/jobs/{job.pk}/report/edit/")
    edited = SEEN.split("## References")[0] + (
        "## Works Cited\n\n- [1] [Pumps](https://b.example/pumps)\n- [2] [Boilers](https://a.example/boilers)\n"
        "- [3] [Read more](https://evil.example/more)\n\nSee also [this page](HTTPS://evil.example/p).\n")
    page.locator("textarea[name=markdown]").fill(edited)
    page.click("#save-report")
    page.wait_for_url(re.compile(rf".*/jobs/{job.pk}/$"))
    ids = page.eval_on_selector_all("#report [id]", "els => els.map(e => e.id)")
    assert len(ids) == len(set(ids)) and "ref-1" in ids
    hrefs = page.eval_on_selector_all("#report a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert hrefs and not [h for h in hrefs if "evil.example" in h]
    assert page.inner_text("#ref-1").find("Pumps") >= 0  # [1] jumps to the app's list: the page the user chose
    assert "Works Cited" not in page.inner_text("#report") and "this page" in page.inner_text("#report")
