"""Issue 33's list of smaller things: a styled /jobs/ and 404, the job list's columns, KB passages
numbered from 1 as reports cite them, and the citation error's range."""

from __future__ import annotations

import lxml.html

from research.jobs import dispatch, services
from research.knowledge import services as kb_services


def _html(response):
    return lxml.html.fromstring(response.content.decode())


def test_jobs_url_is_the_job_list_and_404_is_a_page(alice_client, settings):
    assert alice_client.get("/jobs/")["Location"] == "/"
    settings.DEBUG = False
    page = _html(alice_client.get("/jobs/12345/"))
    assert page.xpath("//link[contains(@href, 'app.css')]") and page.xpath("//*[@id='not-found']")
    assert page.xpath("//*[@id='not-found']//a[@href='/']")


def test_job_list_shows_depth_kb_and_outputs(alice, alice_client, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    notes = kb_services.collection_create(owner=alice, name="notes")
    services.job_create(user=alice, question="Heat pumps?", options={"outputs": ["md", "pdf"]})
    services.job_create(user=alice, question="Heat pumps?", options={"depth": "heavy", "runs": 3, "kb": notes.pk,
                                                                     "outputs": ["md", "pptx", "podcast"]})
    rows = _html(alice_client.get("/")).xpath("//table[contains(@class, 'jobs')]/tbody/tr")
    cells = [{c: row.xpath(f".//td[@class='{c}']")[0].text_content().strip()
              for c in ("job-depth", "job-kb", "job-outputs")} for row in rows]
    assert cells == [{"job-depth": "heavy × 3", "job-kb": "notes", "job-outputs": "Markdown, Slides, Podcast"},
                     {"job-depth": "standard", "job-kb": "—", "job-outputs": "Markdown, PDF"}]


def test_kb_search_numbers_passages_from_one(alice, alice_client):
    notes = kb_services.collection_create(owner=alice, name="notes")
    kb_services.document_add(collection=notes, filename="heat.md", data=b"# Heat\n\nHeat pumps move heat.")
    page = _html(alice_client.get(f"/kb/{notes.pk}/", {"q": "heat pumps"}))
    titles = [a.text_content() for a in page.xpath("//a[@class='kb-hit-title']")]
    assert titles == ["Heat #1"] and "chunk-0" not in page.text_content()  # the stored URL stays a data-url


def test_citation_error_names_the_numbers_in_the_references_list(alice, alice_client, monkeypatch):
    """Nine sources were found but the report lists six: an unknown [7] is told "(1–6)", not "(1–9)"."""
    from research.jobs.models import ReportVersion, Source

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="Heat pumps?", options={})
    for n in range(1, 10):
        Source.objects.create(job=job, number=n, url=f"https://example.org/{n}", title=f"Page {n}", kind="web")
    refs = "\n".join(f"- [{n}] [Page {n}](https://example.org/{n})" for n in range(1, 7))
    ReportVersion.objects.create(job=job, number=1, markdown=f"# R\n\nText [1].\n\n## References\n\n{refs}\n")
    edit = f"# R\n\nText [1] and [7].\n\n## References\n\n{refs}\n"
    html = alice_client.post(f"/jobs/{job.pk}/report/edit/", {"markdown": edit}).content.decode()
    assert "Unknown citation numbers: [7]" in html and "(1–6)" in html and "1–9" not in html
