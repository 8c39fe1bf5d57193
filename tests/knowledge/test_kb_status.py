"""The indexing state of knowledge-base documents, as the collection and document pages poll it."""

from __future__ import annotations

import pytest

from research.jobs import dispatch
from research.knowledge import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(alice, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)  # no worker: the test indexes by hand
    collection = services.collection_create(owner=alice, name="notes")
    good, _ = services.document_submit(collection=collection, filename="a.md",
                                       data=b"# Heat pumps\n\nHeat pumps move heat instead of making it.")
    bad, _ = services.document_submit(collection=collection, filename="b.pdf", data=b"%PDF-1.4\nnot really a pdf")
    return collection, good, bad


def test_statuses_follow_the_index_and_say_why_it_failed(alice_client, submitted):
    collection, good, bad = submitted
    url = f"/kb/{collection.pk}/statuses/"
    before = {d["id"]: d for d in alice_client.get(url).json()["documents"]}
    assert {d["status"] for d in before.values()} == {"indexing"} and before[good.pk]["label"] == "indexing…"
    services.document_index(document_id=good.pk)
    services.document_index(document_id=bad.pk)
    after = {d["id"]: d for d in alice_client.get(url).json()["documents"]}
    assert after[good.pk]["status"] == "ready" and after[good.pk]["label"] == "indexed" and after[good.pk]["chunks"] > 0
    assert after[bad.pk]["status"] == "failed" and after[bad.pk]["label"].startswith("failed: ")
    assert after[bad.pk]["error"] and after[bad.pk]["error"] in after[bad.pk]["label"]
    zh = alice_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN").json()["documents"]
    assert {d["label"] for d in zh if d["status"] == "ready"} == {"已索引"}


def test_an_outsider_gets_404(charlie_client, submitted):
    collection, _, _ = submitted
    assert charlie_client.get(f"/kb/{collection.pk}/statuses/").status_code == 404
