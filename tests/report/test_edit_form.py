"""Issue 31 end to end through the web edit form: a second references list, a deleted list, inline code,
a "Sources" heading mid-report, an edit the check would inflate, and the version page's cache."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.urls import reverse

from research.jobs import services
from research.jobs.models import JobStatus, ResearchJob, Source
from research.report.references import references_entries
from tests.report.links_support import html_targets

pytestmark = pytest.mark.django_db

BOILERS = "Gas boilers convert about 90 percent of the fuel energy into heat."
PUMPS = "Heat pumps deliver three units of heat for each unit of electricity they use."
# The version the user sees: its list numbers the sources 1, 2 in another order than the registry (4, 7).
SEEN = (
    "# Energy report\n\n"
    f"Heat pumps deliver three units of heat for each unit of electricity they use [1]. {BOILERS[:-1]} [2].\n\n"
    "## References\n\n- [1] [Pumps](https://b.example/pumps)\n- [2] [Boilers](https://a.example/boilers)\n"
)


def _job(alice) -> ResearchJob:
    job = services.job_create(user=alice, question="How efficient is home heating?", options={"engine": "offline"})
    Source.objects.create(job=job, number=4, url="https://a.example/boilers", title="Boilers", text=BOILERS,
                          text_hash="a")
    Source.objects.create(job=job, number=7, url="https://b.example/pumps", title="Pumps", text=PUMPS, text_hash="b")
    services.report_version_create(job=job, markdown=SEEN, author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    return job


def _edit(client, job: ResearchJob, markdown: str) -> str:
    response = client.post(reverse("job_report_edit", args=[job.pk]), {"markdown": markdown}, follow=True)
    assert "Saved as a new version" in response.content.decode(), response.content.decode()[:3000]
    return job.report_versions.order_by("-number").first().markdown


def _body(markdown: str) -> str:
    return markdown.split("## References")[0]


@pytest.mark.parametrize("heading", ["## Works Cited", "## 来源", "## Reference list", "## 1. References"])
def test_a_second_references_list_is_replaced_never_kept_beside_the_rebuilt_one(alice, alice_client, heading):
    job = _job(alice)
    fake = (f"{heading}\n\n- [1] [Pumps](https://b.example/pumps)\n- [2] [Boilers](https://a.example/boilers)\n"
            "- [3] [More](https://evil.example/more)\n")
    saved = _edit(alice_client, job, _body(SEEN) + fake)
    assert heading not in saved and "evil.example" not in saved
    assert len(references_entries(saved) or []) == 2
    page = html_targets(alice_client.get(reverse("job_detail", args=[job.pk])).content.decode())
    assert len(page.ids) == len(set(page.ids))  # #ref-1 jumps to the one list the app wrote
    assert all("evil.example" not in h for h in page.hrefs)


def test_deleting_the_references_list_keeps_every_claim_on_its_page(alice, alice_client):
    job = _job(alice)
    saved = _edit(alice_client, job, _body(SEEN).rstrip() + "\n")
    # [1] still means Pumps and [2] Boilers: the list the user saw, not the registry's 4 and 7.
    assert "electricity they use [1]." in saved and "into heat [2]." in saved
    assert references_entries(saved) == references_entries(SEEN)
    assert "unverified" not in saved


def test_a_citation_to_an_entry_the_user_deleted_is_refused_with_a_clear_message(alice, alice_client):
    job = _job(alice)
    edited = _body(SEEN) + "## References\n\n- [1] [Pumps](https://b.example/pumps)\n"
    response = alice_client.post(reverse("job_report_edit", args=[job.pk]), {"markdown": edited})
    assert response.status_code == 400
    assert "Unknown citation numbers: [2]" in response.content.decode()
    assert job.report_versions.count() == 1


def test_the_inline_code_example_is_saved_unchanged_apart_from_its_citation(alice, alice_client):
    job = _job(alice)
    line = "Gas boilers convert about 90 percent of the fuel energy into heat; use the `x` bundle: `y`."
    saved = _edit(alice_client, job, f"# Energy report\n\n{line} [2]\n\n" + SEEN.split("\n\n", 2)[2])
    assert f"{line} [1]" in saved  # renumbered 1..n by first use: Boilers is now the first source cited
    assert references_entries(saved)[0].url == "https://a.example/boilers"


def test_a_sources_heading_mid_report_loses_no_text(alice, alice_client):
    job = _job(alice)
    edited = ("# Energy report\n\n## Sources\n\nThe figures come from two reviews.\n\n## Heating\n\n"
              f"{PUMPS[:-1]} [1].\n\n## References\n\n- [1] [Pumps](https://b.example/pumps)\n")
    saved = _edit(alice_client, job, edited)
    assert "The figures come from two reviews." in saved and "## Heating" in saved and PUMPS[:-1] in saved


def test_an_edit_the_check_would_inflate_past_the_budget_is_refused(alice, monkeypatch):
    job = _job(alice)
    edited = "# R\n\n" + "1. " * 900
    monkeypatch.setattr(services, "REPORT_MAX_CHARS", len(edited))
    with pytest.raises(ValidationError, match="over the"):
        services.report_edit(job=job, markdown=edited)
    assert job.report_versions.count() == 1


def test_an_old_version_page_renders_through_the_report_cache(alice, alice_client):
    job = _job(alice)
    _edit(alice_client, job, _body(SEEN).rstrip() + "\n")
    cache.clear()
    version = job.report_versions.get(number=1)
    page = alice_client.get(reverse("job_report_version", args=[job.pk, 1])).content.decode()
    key = f"report-html:2:{version.pk}:/jobs/{job.pk}/files/figures/x.png?inline=1"
    assert isinstance(cache.get(key), str)  # rendered once, then served from the cache like the job page
    assert "Heat pumps deliver" in page
