"""Outsiders beyond the per-URL 404 checks (tests/jobs/test_ownership.py) and the socket refusals
(tests/jobs/test_consumer.py, and over real daphne in tests/integration/test_job_flow.py): a job
cannot reach into another user's knowledge base."""

from __future__ import annotations

import pytest
from django.http import Http404

from research.jobs import dispatch, services
from research.jobs.models import ResearchJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def alices_kb(alice):
    from research.knowledge import services as kb_services

    collection = kb_services.collection_create(owner=alice, name="private notes")
    kb_services.document_add(collection=collection, filename="a.txt", data=b"Alice's private heat pump notes.")
    return collection


def test_a_job_cannot_search_someone_elses_knowledge_base(charlie, charlie_client, alices_kb, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    with pytest.raises(Http404):
        services.job_create(user=charlie, question="What do the notes say?", options={"kb": alices_kb.pk})
    response = charlie_client.post("/jobs/new/", {"question": "What do the notes say?", "style": "academic",
                                                  "locale": "auto", "max_steps": 2, "engine": "offline",
                                                  "kb": alices_kb.pk})
    assert response.status_code == 400  # not one of charlie's collections
    assert not ResearchJob.objects.filter(owner=charlie).exists()
