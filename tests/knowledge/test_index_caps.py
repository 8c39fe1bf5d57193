"""Knowledge-base indexing runs in a worker, within page, decompressed-size, text-size and time caps.

The bomb: one Flate-compressed content stream of ~1 MB of text operators, reused as the contents of
40 pages (under 10 KB on disk; unbounded it gave 34 MB of text and minutes of CPU).
"""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from research.jobs import dispatch
from research.knowledge import services
from research.knowledge.extract import DocumentRejected, extract_document
from research.knowledge.models import Chunk, Document, DocumentStatus
from tests.knowledge.factories import CORPUS, make_pdf_bomb


@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """Record the kb_index units the services send instead of sending them."""
    sent: list[int] = []

    def record(unit: str, *args: int | str) -> None:
        assert unit == "kb_index", unit
        sent.append(int(args[0]))

    monkeypatch.setattr(dispatch, "send_on_commit", record)
    return sent


def test_default_caps_refuse_the_bomb_before_extracting_text(db):
    bomb = make_pdf_bomb()
    assert len(bomb) < 12_000
    with pytest.raises(DocumentRejected, match=r"pages expand to more than 33,554,432 bytes"):
        extract_document(filename="bomb.pdf", data=bomb)


def test_page_cap(db, settings):
    settings.KB_MAX_PDF_PAGES = 10
    with pytest.raises(DocumentRejected, match="the PDF has 40 pages; the limit is 10"):
        extract_document(filename="bomb.pdf", data=make_pdf_bomb())


def test_text_size_cap(db, settings):
    settings.KB_MAX_DECOMPRESSED_BYTES = 10**9
    settings.KB_MAX_TEXT_CHARS = 400_000
    with pytest.raises(DocumentRejected, match="more than 400,000 characters of text"):
        extract_document(filename="bomb.pdf", data=make_pdf_bomb(pages=5, stream_bytes=300_000))


def test_text_size_cap_covers_plain_text_too(db, settings):
    settings.KB_MAX_TEXT_CHARS = 1000
    with pytest.raises(DocumentRejected, match="more than 1,000 characters of text"):
        extract_document(filename="long.txt", data=b"word " * 1000)


def test_time_cap(db, settings):
    """Each page of the bomb takes seconds to extract; with a 1 s budget extraction stops after the first."""
    settings.KB_MAX_DECOMPRESSED_BYTES = 10**9
    settings.KB_MAX_TEXT_CHARS = 10**9
    settings.KB_INDEX_TIME_S = 1
    with pytest.raises(DocumentRejected, match="took longer than 1 s"):
        extract_document(filename="bomb.pdf", data=make_pdf_bomb())


def test_upload_returns_at_once_and_the_bomb_ends_failed_with_a_reason(alice_client, alice_kb, queued):
    response = alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
        {"files": [SimpleUploadedFile("bomb.pdf", make_pdf_bomb(), content_type="application/pdf"),
                   SimpleUploadedFile("tcp.md", CORPUS["tcp.md"].encode(), content_type="text/markdown")]},
    )
    assert response.status_code == 302
    bomb, good = Document.objects.get(filename="bomb.pdf"), Document.objects.get(filename="tcp.md")
    assert sorted(queued) == sorted([bomb.pk, good.pk])
    assert bomb.status == good.status == DocumentStatus.INDEXING and not Chunk.objects.exists()
    page = alice_client.get(reverse("knowledge:collection_detail", kwargs={"collection_id": alice_kb.pk}))
    assert page.content.decode().count("indexing…") >= 2

    for document_id in queued:  # what the worker's task does
        services.document_index(document_id=document_id)
    bomb.refresh_from_db()
    good.refresh_from_db()
    assert bomb.status == DocumentStatus.FAILED and "expand to more than" in bomb.error
    assert bomb.data is None and bomb.chunk_count == 0 and not bomb.chunks.exists()
    assert good.status == DocumentStatus.READY and good.chunks.exists() and good.data is None
    shown = alice_client.get(reverse("knowledge:document_detail", kwargs={"document_id": bomb.pk})).content.decode()
    assert "failed: the PDF&#x27;s pages expand to more than" in shown

    services.document_index(document_id=bomb.pk)  # a repeated delivery changes nothing
    bomb.refresh_from_db()
    assert bomb.status == DocumentStatus.FAILED and bomb.attempts == 1


def test_a_document_whose_worker_keeps_dying_fails_instead_of_looping(alice_kb, queued, settings):
    document, created = services.document_submit(collection=alice_kb, filename="a.txt", data=b"Plain words.")
    assert created
    # Deliveries that never finished (the worker was killed at the hard time limit) count as attempts.
    Document.objects.filter(pk=document.pk).update(attempts=settings.KB_INDEX_MAX_ATTEMPTS)
    services.document_index(document_id=document.pk)
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED and "interrupted" in document.error


def test_a_failed_copy_is_queued_again_on_a_new_upload(alice_kb, queued, settings):
    settings.KB_MAX_TEXT_CHARS = 5
    document, _ = services.document_submit(collection=alice_kb, filename="a.txt", data=b"Plain words.")
    services.document_index(document_id=document.pk)
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED
    settings.KB_MAX_TEXT_CHARS = 1000
    again, created = services.document_submit(collection=alice_kb, filename="a.txt", data=b"Plain words.")
    assert again.pk == document.pk and not created and again.status == DocumentStatus.INDEXING
    services.document_index(document_id=document.pk)
    document.refresh_from_db()
    assert document.status == DocumentStatus.READY and document.chunk_count == 1


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_indexes_uploads_and_fails_the_bomb(worker, alice, client):
    """The upload path end to end: the view queues, the session's Celery worker indexes."""
    client.force_login(alice)
    collection = services.collection_create(owner=alice, name="Worker notes")
    response = client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": collection.pk}),
        {"files": [SimpleUploadedFile("bomb.pdf", make_pdf_bomb(), content_type="application/pdf"),
                   SimpleUploadedFile("tcp.md", CORPUS["tcp.md"].encode(), content_type="text/markdown")]},
    )
    assert response.status_code == 302
    deadline = time.monotonic() + 90
    while Document.objects.filter(collection=collection, status=DocumentStatus.INDEXING).exists():
        assert time.monotonic() < deadline, worker.tail()
        time.sleep(0.2)
    bomb, good = Document.objects.get(filename="bomb.pdf"), Document.objects.get(filename="tcp.md")
    assert bomb.status == DocumentStatus.FAILED and "expand to more than" in bomb.error, bomb.error
    assert good.status == DocumentStatus.READY and good.chunk_count > 0
    found = client.get(reverse("knowledge:collection_detail", kwargs={"collection_id": collection.pk}),
                       {"q": "congestion window"}).content.decode()
    assert f"kb://{good.pk}#chunk-" in found and "failed: the PDF&#x27;s pages expand" in found
    assert "research.knowledge.tasks.document_index" in worker.log.read_text(errors="replace")
