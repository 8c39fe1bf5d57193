"""JS on: a knowledge-base page that shows "indexing…" turns to "indexed" / "failed: reason" by itself,
without a reload (a half-filled form on the page survives)."""

from __future__ import annotations

import pytest

from research.jobs import dispatch
from research.knowledge import services
from research.knowledge.models import Collection, Document
from tests.e2e.conftest import sign_in
from tests.e2e.test_clarify_browser import _shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
HEAT_PUMPS = b"# Heat pumps\n\nHeat pumps move heat instead of making it."


def _submitted(owner, monkeypatch, files: list[tuple[str, bytes]]) -> tuple[Collection, list[Document]]:
    """Documents submitted as the upload view does, but with no task sent: the test runs the index itself,
    so the page is certain to be drawn while they are still indexing."""
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    collection = services.collection_create(owner=owner, name="notes")
    return collection, [services.document_submit(collection=collection, filename=n, data=d)[0] for n, d in files]


def test_indexing_status_updates_live(page, dora, asgi_server, monkeypatch):
    base = asgi_server.url
    collection, (good, bad) = _submitted(dora, monkeypatch, [("heat-pumps.md", HEAT_PUMPS),
                                                             ("broken.pdf", b"%PDF-1.4\nnot a pdf")])
    sign_in(page, base)

    page.goto(base + f"/kb/{collection.pk}/")
    assert page.inner_text(f"tr[data-doc-id='{good.pk}'] .kb-status") == "indexing…"
    page.fill("input[name=q]", "typed before the index finished")  # what a reload would throw away
    page.evaluate("window.__notReloaded = true")

    services.document_index(document_id=good.pk)
    page.wait_for_selector(f"tr[data-doc-id='{good.pk}'] .kb-status[data-status='ready']", timeout=20_000)
    assert page.inner_text(f"tr[data-doc-id='{good.pk}'] .kb-status") == "indexed"
    assert int(page.inner_text(f"tr[data-doc-id='{good.pk}'] .kb-chunks")) > 0
    assert page.inner_text(f"tr[data-doc-id='{bad.pk}'] .kb-status") == "indexing…"  # still waiting

    services.document_index(document_id=bad.pk)
    page.wait_for_selector(f"tr[data-doc-id='{bad.pk}'] .kb-status[data-status='failed']", timeout=20_000)
    assert page.inner_text(f"tr[data-doc-id='{bad.pk}'] .kb-status").startswith("failed: ")
    assert page.evaluate("window.__notReloaded === true")
    assert page.input_value("input[name=q]") == "typed before the index finished"
    page.screenshot(path=str(_shot("kb-status-live")), full_page=True)


def test_document_page_shows_the_text_once_indexed(page, dora, asgi_server, monkeypatch):
    base = asgi_server.url
    _, (doc,) = _submitted(dora, monkeypatch, [("heat-pumps.md", HEAT_PUMPS)])
    sign_in(page, base)
    page.goto(base + f"/kb/documents/{doc.pk}/")
    assert page.inner_text(".kb-status") == "indexing…" and not page.query_selector(".kb-text")
    services.document_index(document_id=doc.pk)
    page.wait_for_selector(".kb-text", timeout=20_000)  # reloaded once, now with the extracted text
    assert "Heat pumps move heat" in page.inner_text(".kb-text")
    assert page.inner_text(".kb-status") == "indexed"
