"""Issue 33, "A working path": the plan page says when nothing can be searched, offers a knowledge base
(attach one, or upload a file right there) and no Accept; every search message is true of this job."""

from __future__ import annotations

import lxml.html
import pytest
from django.test import Client

from research.agents.types import Plan, PlanStep
from research.jobs import dispatch, services
from research.jobs.events import event_emit
from research.jobs.models import JobStatus, ResearchJob
from research.jobs.search_check import EVENT
from research.jobs.web.failures import search_advice
from research.knowledge import services as kb_services
from tests.support.jobs import TO_REVIEW, job_walk

DOWN = {"ok": False, "reasons": [["searxng", "ConnectError: [Errno 111] Connection refused"]],
        "errors": [{"provider": "searxng", "label": "SearXNG", "kind": "refused", "status": None,
                    "message": "ConnectError: [Errno 111] Connection refused"}],
        "kb": False, "web": True, "web_ok": False}


@pytest.fixture
def review_job(alice, monkeypatch) -> ResearchJob:
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="How efficient are heat pumps?", options={"engine": "offline"})
    plan = Plan(locale="en-US", title="Heat pumps", thought="", steps=[
        PlanStep(id="s1", title="How efficient are heat pumps?", description="", step_type="research",
                 need_search=True, depends_on=[])])
    job_walk(job, *TO_REVIEW[:2])
    services.plan_version_create(job=job, plan=plan, author="planner")
    job_walk(job, TO_REVIEW[2])
    return job


def _page(client: Client, job: ResearchJob):
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200
    return lxml.html.fromstring(response.content.decode())


def _accept(client: Client, job: ResearchJob):
    return client.post(f"/jobs/{job.pk}/plan/", {
        "op": "accept", "base_version": "1", "title": "Heat pumps", "form-TOTAL_FORMS": "1",
        "form-INITIAL_FORMS": "1", "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "50", "form-0-id": "s1",
        "form-0-title": "How efficient are heat pumps?", "form-0-description": "", "form-0-step_type": "research",
        "form-0-need_search": "on", "form-0-depends_on": ""})


def test_nothing_to_search_offers_ways_forward_and_no_accept(alice_client, alice, review_job):
    event_emit(job_id=review_job.pk, type=EVENT, payload=DOWN)
    page = _page(alice_client, review_job)
    (warning,) = page.xpath("//*[@id='search-warning']")
    assert "SearXNG refused the connection" in warning.text_content()
    assert page.xpath("//*[@id='ways-forward']//form[@id='kb-upload-form']//input[@type='file']")
    assert page.xpath("//button[@id='accept-plan'][@disabled]")
    response = _accept(alice_client, review_job)  # a stale page or a script: refused, nothing runs
    assert response.status_code == 400 and "attach a knowledge base" in response.content.decode()
    review_job.refresh_from_db()
    assert review_job.status == JobStatus.AWAITING_REVIEW


def test_attaching_a_kb_unblocks_and_the_messages_stay_true(alice_client, alice, charlie, review_job):
    event_emit(job_id=review_job.pk, type=EVENT, payload=DOWN)
    notes = kb_services.collection_create(owner=alice, name="notes")
    page = _page(alice_client, review_job)
    assert page.xpath("//select[@id='kb-attach']/option[@value=$v]", v=str(notes.pk))
    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.post(f"/jobs/{review_job.pk}/kb/", {"kb": notes.pk}).status_code == 404
    alice_client.post(f"/jobs/{review_job.pk}/kb/", {"kb": notes.pk})
    review_job.refresh_from_db()
    assert review_job.options["kb"] == notes.pk
    page = _page(alice_client, review_job)
    html = lxml.html.tostring(page, encoding="unicode")
    assert not page.xpath("//*[@id='search-warning']") and not page.xpath("//button[@id='accept-plan'][@disabled]")
    assert "searches the knowledge base alone" in page.xpath("//*[@id='search-kb-only']")[0].text_content()
    assert "Attach a knowledge base" not in html
    assert page.xpath("//*[@id='plan-kb-name']")[0].text_content() == "notes"
    assert _accept(alice_client, review_job).status_code == 302
    review_job.refresh_from_db()
    assert review_job.status == JobStatus.RESEARCHING


def test_someone_elses_kb_cannot_be_attached(alice_client, bob, review_job):
    theirs = kb_services.collection_create(owner=bob, name="bobs")
    assert alice_client.post(f"/jobs/{review_job.pk}/kb/", {"kb": theirs.pk}).status_code == 404
    review_job.refresh_from_db()
    assert review_job.options.get("kb") is None


def test_upload_on_the_plan_page_makes_and_attaches_a_kb(alice_client, alice, review_job, monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from research.knowledge import services as kbs

    monkeypatch.setattr(kbs, "enqueue_document_index", lambda *a: None, raising=False)
    event_emit(job_id=review_job.pk, type=EVENT, payload=DOWN)
    upload = SimpleUploadedFile("heat.md", b"# Heat pumps\n\nHeat pumps move heat.", content_type="text/markdown")
    response = alice_client.post(f"/jobs/{review_job.pk}/kb/upload/", {"files": [upload]})
    assert response.status_code == 302 and response["Location"] == f"/jobs/{review_job.pk}/"
    review_job.refresh_from_db()
    kb = alice.kb_collections.get(pk=review_job.options["kb"])
    assert kb.name == "My documents" and kb.documents.count() == 1
    assert not _page(alice_client, review_job).xpath("//button[@id='accept-plan'][@disabled]")


def test_new_job_page_says_no_search_and_offers_an_upload(alice_client):
    page = lxml.html.fromstring(alice_client.get("/jobs/new/").content.decode())
    (warning,) = page.xpath("//*[@id='search-warning']")
    assert "No web search can be reached" in warning.text_content()
    assert page.xpath("//form[@id='quick-upload']//input[@type='file']")


def test_failure_advice_never_says_attach_when_one_is_attached():
    assert "Attach a knowledge base" in search_advice(has_kb=False)
    assert "Attach a knowledge base" not in search_advice(has_kb=True)


def test_search_check_with_kb_and_dead_web_is_ok_and_says_web_is_down(alice, monkeypatch, settings):
    from research.jobs.search_check import search_check

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    notes = kb_services.collection_create(owner=alice, name="notes")
    settings.SEARXNG_URL, settings.SEARCH_PROVIDERS = "http://127.0.0.1:9/", ["searxng", "knowledge"]
    job = services.job_create(user=alice, question="Heat pumps?", options={"kb": notes.pk})
    check = search_check(job=job)
    assert check | {"reasons": [], "errors": []} == {"ok": True, "kb": True, "web": True, "web_ok": False,
                                                     "reasons": [], "errors": []}
    assert [e["kind"] for e in check["errors"]] == ["refused"]
    off = services.job_create(user=alice, question="Heat pumps?", options={"kb": notes.pk, "web": False})
    assert search_check(job=off) == {"ok": True, "kb": True, "web": False, "web_ok": False, "reasons": [],
                                     "errors": []}


def test_upload_on_the_new_job_page_comes_back_with_that_kb_chosen(alice_client, alice, monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    upload = SimpleUploadedFile("heat.md", b"# Heat pumps\n\nHeat pumps move heat.", content_type="text/markdown")
    response = alice_client.post("/kb/upload/", {"files": [upload]})
    kb = alice.kb_collections.get(name="My documents")
    assert response.status_code == 302 and response["Location"] == f"/jobs/new/?kb={kb.pk}"
    page = lxml.html.fromstring(alice_client.get(response["Location"]).content.decode())
    assert page.xpath("//select[@name='kb']/option[@selected]/@value") == [str(kb.pk)]
    assert kb.documents.count() == 1


def test_form_refuses_an_auto_accepted_job_with_nothing_to_search(alice_client, alice, monkeypatch):
    """No web provider answers (SearXNG on a closed port) and no KB: skipping the review could only fail."""
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    post = {"question": "How efficient are heat pumps?", "style": "academic", "locale": "auto", "max_steps": 2,
            "engine": "offline", "web": "on", "auto_accept": "on"}
    response = alice_client.post("/jobs/new/", post)
    assert response.status_code == 400 and "Nothing can be searched" in response.content.decode()
    assert not ResearchJob.objects.exists()
    notes = kb_services.collection_create(owner=alice, name="notes")
    assert alice_client.post("/jobs/new/", {**post, "kb": notes.pk}).status_code == 302  # a KB to search: runs
    del post["auto_accept"]
    assert alice_client.post("/jobs/new/", post).status_code == 302  # reviewed: the plan page offers the ways
