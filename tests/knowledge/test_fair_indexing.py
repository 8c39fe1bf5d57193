"""Knowledge-base indexing has its own per-account cap (issue 34, case 3): at most KB_USER_INDEXING_AT_ONCE
documents of one account are extracted at once; the rest wait in order and are sent as one ends."""

from __future__ import annotations

import pytest

from research.jobs import dispatch
from research.knowledge import services
from research.knowledge.models import Document, DocumentStatus

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def sent(monkeypatch, settings) -> list[tuple]:
    settings.KB_USER_INDEXING_AT_ONCE = 1
    units: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: units.append(a))
    return units


def test_an_accounts_documents_are_extracted_one_at_a_time_and_in_order(sent, alice, bob):
    mine = services.collection_create(owner=alice, name="a")
    first, _ = services.document_submit(collection=mine, filename="1.txt", data=b"Heat pumps move heat.")
    second, _ = services.document_submit(collection=mine, filename="2.txt", data=b"Solar panels make power.")
    Document.objects.filter(pk=first.pk).update(attempts=1)  # a worker is extracting the first one
    services.document_index(document_id=second.pk)
    second.refresh_from_db()
    assert second.status == DocumentStatus.INDEXING and second.attempts == 0  # waits for its turn
    # Another account's document is not held up by alice's.
    theirs, _ = services.document_submit(collection=services.collection_create(owner=bob, name="b"),
                                         filename="3.txt", data=b"Wind turbines turn.")
    services.document_index(document_id=theirs.pk)
    assert Document.objects.get(pk=theirs.pk).status == DocumentStatus.READY
    # The first one ends: the waiting one is sent, and then indexed.
    Document.objects.filter(pk=first.pk).update(attempts=0)
    sent.clear()
    services.document_index(document_id=first.pk)
    assert Document.objects.get(pk=first.pk).status == DocumentStatus.READY
    assert ("kb_index", second.pk) in sent
    services.document_index(document_id=second.pk)
    assert Document.objects.get(pk=second.pk).status == DocumentStatus.READY
