import pytest
from django.core.exceptions import ValidationError
from django.http import Http404

from research.knowledge import selectors, services
from research.knowledge.extract import DocumentRejected
from research.knowledge.models import Chunk, Collection, Document, Posting
from tests.knowledge.factories import CORPUS, make_pdf


def test_collection_names_are_unique_per_owner(alice, bob):
    services.collection_create(owner=alice, name="Papers")
    with pytest.raises(ValidationError):
        services.collection_create(owner=alice, name="  Papers ")
    with pytest.raises(ValidationError):
        services.collection_create(owner=alice, name="   ")
    services.collection_create(owner=bob, name="Papers")  # another owner may reuse it
    assert Collection.objects.filter(name="Papers").count() == 2


def test_document_add_extracts_chunks_and_indexes(alice_kb):
    document = services.document_add(collection=alice_kb, filename="tcp.md", data=CORPUS["tcp.md"].encode())
    assert document.title == "TCP congestion control"
    assert document.content_type == "text/markdown"
    assert document.size == len(CORPUS["tcp.md"].encode())
    assert len(document.sha256) == 64
    chunks = list(document.chunks.order_by("index"))
    assert [c.index for c in chunks] == list(range(document.chunk_count)) and chunks
    assert all(c.length > 0 for c in chunks)
    terms = set(Posting.objects.filter(chunk__document=document).values_list("term", flat=True))
    assert {"congestion", "window", "packet", "tcp"} <= terms
    assert "the" not in terms


def test_same_bytes_are_added_once_per_collection(alice, alice_kb):
    data = make_pdf(["Deduplication by content hash."])
    first, created = services.document_add_or_get(collection=alice_kb, filename="a.pdf", data=data)
    again, created_again = services.document_add_or_get(collection=alice_kb, filename="renamed.pdf", data=data)
    assert created and not created_again
    assert again.pk == first.pk and again.filename == "a.pdf"
    assert Document.objects.filter(collection=alice_kb).count() == 1
    # A different collection gets its own copy.
    other = services.collection_create(owner=alice, name="Other")
    assert services.document_add(collection=other, filename="a.pdf", data=data).pk != first.pk


def test_rejected_file_leaves_nothing_behind(alice_kb):
    with pytest.raises(DocumentRejected):
        services.document_add(collection=alice_kb, filename="fake.pdf", data=b"not a pdf")
    assert not Document.objects.exists() and not Chunk.objects.exists()


def test_document_add_many_keeps_going_past_rejections(alice_kb):
    results = services.document_add_many(
        collection=alice_kb,
        files=iter(
            [
                ("good.txt", b"Glaciers carve valleys.", "text/plain"),
                ("bad.exe", b"MZ", "application/octet-stream"),
                ("dup.txt", b"Glaciers carve valleys.", "text/plain"),
            ]
        ),
    )
    assert [r.status for r in results] == ["added", "rejected", "already present"]
    assert "unsupported file type" in results[1].error


def test_deletes_cascade(alice_kb, alice_doc):
    assert Chunk.objects.filter(document=alice_doc).exists()
    services.document_delete(document=alice_doc)
    assert not Chunk.objects.exists() and not Posting.objects.exists()
    services.document_add(collection=alice_kb, filename="x.txt", data=b"Another text about rivers.")
    services.collection_delete(collection=alice_kb)
    assert not Document.objects.exists() and not Posting.objects.exists()


def test_selectors_are_user_scoped(alice, charlie, alice_kb, alice_doc):
    assert list(selectors.collection_list_for_user(user=alice)) == [alice_kb]
    assert selectors.collection_list_for_user(user=alice)[0].document_count == 1
    assert not selectors.collection_list_for_user(user=charlie).exists()
    assert selectors.collection_get_for_user(user=alice, collection_id=alice_kb.pk) == alice_kb
    assert selectors.collection_get_by_name(user=alice, name="Alice notes") == alice_kb
    assert selectors.document_get_for_user(user=alice, document_id=alice_doc.pk) == alice_doc
    with pytest.raises(Http404):
        selectors.collection_get_for_user(user=charlie, collection_id=alice_kb.pk)
    with pytest.raises(Http404):
        selectors.collection_get_by_name(user=charlie, name="Alice notes")
    with pytest.raises(Http404):
        selectors.document_get_for_user(user=charlie, document_id=alice_doc.pk)
    with pytest.raises(Http404):
        selectors.collection_get_for_user(user=alice, collection_id=999999)
