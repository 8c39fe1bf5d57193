import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from research.knowledge.models import Collection, Document
from tests.knowledge.factories import CORPUS, make_pdf


def upload(name: str, data: bytes, content_type: str = "application/octet-stream") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=content_type)


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def urls_for(collection: Collection, document: Document) -> list[str]:
    return [
        reverse("knowledge:collection_detail", kwargs={"collection_id": collection.pk}),
        reverse("knowledge:document_upload", kwargs={"collection_id": collection.pk}),
        reverse("knowledge:collection_delete", kwargs={"collection_id": collection.pk}),
        reverse("knowledge:document_detail", kwargs={"document_id": document.pk}),
        reverse("knowledge:document_delete", kwargs={"document_id": document.pk}),
    ]


def test_alice_creates_uploads_views_searches_and_deletes(alice_client, alice, monkeypatch):
    from research.jobs import dispatch
    from research.knowledge import services

    queued: list[int] = []  # the worker's part is played below by calling the task's service
    monkeypatch.setattr(dispatch, "send_on_commit", lambda unit, *args: queued.append(int(args[0])))
    response = alice_client.post(
        reverse("knowledge:collection_list"), {"name": "Science", "description": "Papers I read"}
    )
    collection = Collection.objects.get(owner=alice, name="Science")
    detail_url = reverse("knowledge:collection_detail", kwargs={"collection_id": collection.pk})
    assert response.status_code == 302 and response["Location"] == detail_url

    listing = alice_client.get(reverse("knowledge:collection_list"))
    assert listing.status_code == 200 and b"Science" in listing.content
    assert b"css/knowledge.css" in listing.content

    response = alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": collection.pk}),
        {
            "files": [
                upload("tcp.md", CORPUS["tcp.md"].encode(), "text/markdown"),
                upload("tidal.pdf", make_pdf(["Tidal turbines in the Severn estuary."]), "application/pdf"),
                upload("bees.html", CORPUS["black_holes.html"].encode(), "text/html"),
                upload("virus.exe", b"MZ\x90\x00"),
                upload("fake.pdf", b"I am not a PDF", "application/pdf"),
                upload("empty.txt", b""),
            ]
        },
    )
    assert response.status_code == 302
    notes = messages_of(response)
    assert "tcp.md: added; indexing…" in notes and "tidal.pdf: added; indexing…" in notes
    assert "bees.html: added; indexing…" in notes
    assert any(n.startswith("virus.exe: rejected: unsupported file type") for n in notes)
    assert any(n.startswith("fake.pdf: rejected:") and "not a PDF" in n for n in notes)
    assert "empty.txt: rejected: the file is empty" in notes
    assert set(collection.documents.values_list("filename", flat=True)) == {"tcp.md", "tidal.pdf", "bees.html"}
    assert len(queued) == 3
    for document_id in queued:
        services.document_index(document_id=document_id)
    assert set(collection.documents.values_list("status", flat=True)) == {"ready"}

    again = alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": collection.pk}),
        {"files": [upload("tcp-copy.md", CORPUS["tcp.md"].encode())]},
    )
    assert any("already present" in n for n in messages_of(again))
    assert collection.documents.count() == 3

    page = alice_client.get(detail_url)
    assert page.status_code == 200
    assert b"TCP congestion control" in page.content and b'enctype="multipart/form-data"' in page.content
    found = alice_client.get(detail_url, {"q": "congestion window"})
    document = collection.documents.get(filename="tcp.md")
    assert f"kb://{document.pk}#chunk-0".encode() in found.content

    doc_page = alice_client.get(reverse("knowledge:document_detail", kwargs={"document_id": document.pk}))
    assert doc_page.status_code == 200 and b"slow start grows the window" in doc_page.content.lower()

    response = alice_client.post(reverse("knowledge:document_delete", kwargs={"document_id": document.pk}))
    assert response.status_code == 302 and response["Location"] == detail_url
    assert not Document.objects.filter(pk=document.pk).exists()

    confirm = alice_client.get(reverse("knowledge:collection_delete", kwargs={"collection_id": collection.pk}))
    assert confirm.status_code == 200 and b'<form method="post"' in confirm.content
    response = alice_client.post(reverse("knowledge:collection_delete", kwargs={"collection_id": collection.pk}))
    assert response.status_code == 302 and response["Location"] == reverse("knowledge:collection_list")
    assert not Collection.objects.filter(pk=collection.pk).exists()
    assert not Document.objects.exists()


def test_duplicate_collection_name_is_a_form_error(alice_client, alice_kb):
    response = alice_client.post(reverse("knowledge:collection_list"), {"name": "Alice notes"})
    assert response.status_code == 200
    assert response.context["form"].errors
    assert Collection.objects.filter(name="Alice notes").count() == 1


def test_document_text_is_escaped(alice_client, alice_kb):
    payload = b"Notes <script>alert('x')</script> and <b>bold</b> & more."
    alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
        {"files": [upload("xss.txt", payload, "text/plain")]},
    )
    document = Document.objects.get(filename="xss.txt")
    from research.knowledge import services

    services.document_index(document_id=document.pk)  # the worker's part
    page = alice_client.get(reverse("knowledge:document_detail", kwargs={"document_id": document.pk}))
    assert b"<script>alert" not in page.content
    assert b"&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page.content
    # Search snippets are escaped too.
    hits = alice_client.get(
        reverse("knowledge:collection_detail", kwargs={"collection_id": alice_kb.pk}), {"q": "bold notes"}
    )
    assert b"<b>bold</b>" not in hits.content and b"&lt;b&gt;bold" in hits.content


def test_outsider_gets_404_everywhere(charlie_client, alice_kb, alice_doc):
    for url in urls_for(alice_kb, alice_doc):
        assert charlie_client.get(url).status_code == 404, url
        assert charlie_client.post(url, {"name": "x"}).status_code == 404, url
    upload_url = reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk})
    response = charlie_client.post(upload_url, {"files": [upload("a.txt", b"intrusion")]})
    assert response.status_code == 404
    assert Collection.objects.filter(pk=alice_kb.pk).exists() and Document.objects.count() == 1
    # Charlie's own list shows none of alice's collections.
    assert b"Alice notes" not in charlie_client.get(reverse("knowledge:collection_list")).content
    # Missing objects look the same as other people's.
    assert (
        charlie_client.get(reverse("knowledge:collection_detail", kwargs={"collection_id": 987654})).status_code == 404
    )


def test_anonymous_is_sent_to_login(client, alice_kb, alice_doc):
    for url in [reverse("knowledge:collection_list"), *urls_for(alice_kb, alice_doc)]:
        for response in (client.get(url), client.post(url)):
            assert response.status_code == 302 and "login" in response["Location"], url
    assert Collection.objects.count() == 1 and Document.objects.count() == 1


def test_csrf_is_enforced_on_every_post(alice, alice_kb, alice_doc):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    posts = [
        (reverse("knowledge:collection_list"), {"name": "Sneaky"}),
        (
            reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
            {"files": [upload("a.txt", b"forged upload")]},
        ),
        (reverse("knowledge:document_delete", kwargs={"document_id": alice_doc.pk}), {}),
        (reverse("knowledge:collection_delete", kwargs={"collection_id": alice_kb.pk}), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
    assert Collection.objects.count() == 1 and Document.objects.count() == 1

    # With the token from a page, the same upload works.
    client.get(reverse("knowledge:collection_detail", kwargs={"collection_id": alice_kb.pk}))
    token = client.cookies["csrftoken"].value
    response = client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
        {"csrfmiddlewaretoken": token, "files": [upload("a.txt", b"a real upload")]},
    )
    assert response.status_code == 302
    assert Document.objects.filter(filename="a.txt").exists()


def test_oversize_file_is_rejected_and_the_others_saved(alice_client, alice_kb, settings):
    settings.KB_MAX_UPLOAD_BYTES = 2000
    response = alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
        {"files": [upload("big.txt", b"word " * 1000), upload("small.txt", b"small but fine")]},
    )
    notes = messages_of(response)
    assert any(n.startswith("big.txt: rejected: the file is larger than 2,000 bytes") for n in notes)
    assert "small.txt: added; indexing…" in notes
    assert list(alice_kb.documents.values_list("filename", flat=True)) == ["small.txt"]


def test_request_declared_too_large_is_refused_before_reading(alice_client, alice_kb, settings):
    settings.KB_MAX_UPLOAD_BYTES = 1000  # the request cap is a few times this
    response = alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
        {"files": [upload("huge.txt", b"x" * 200_000)]},
    )
    assert response.status_code == 413
    assert b"Upload refused" in response.content
    assert not alice_kb.documents.exists()


def test_upload_without_content_length_is_refused(alice_client, alice_kb, settings):
    """A chunked request carries no Content-Length: nothing is read or saved, whatever the body holds."""
    settings.KB_MAX_UPLOAD_BYTES = 1000
    response = alice_client.post(
        reverse("knowledge:document_upload", kwargs={"collection_id": alice_kb.pk}),
        {"files": [upload("huge.txt", b"x" * 200_000)]},
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    assert response.status_code == 411
    assert not alice_kb.documents.exists()


@pytest.mark.parametrize("method", ["put", "delete", "patch"])
def test_other_methods_are_not_allowed(alice_client, alice_kb, alice_doc, method):
    url = reverse("knowledge:document_detail", kwargs={"document_id": alice_doc.pk})
    assert getattr(alice_client, method)(url).status_code == 405
