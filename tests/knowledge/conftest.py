"""Fixtures for knowledge-base tests (alice / bob / charlie come from tests/conftest.py)."""

from __future__ import annotations

import pytest

from research.knowledge import services
from research.knowledge.models import Collection
from tests.knowledge.factories import CORPUS


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    # Autouse runs before the user fixtures, so alice/bob/charlie skip the slow default hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice_kb(alice) -> Collection:
    return services.collection_create(owner=alice, name="Alice notes", description="mine")


@pytest.fixture
def alice_doc(alice_kb):
    return services.document_add(collection=alice_kb, filename="volcanoes.txt", data=CORPUS["volcanoes.txt"].encode())


@pytest.fixture
def corpus_kb(alice) -> Collection:
    collection = services.collection_create(owner=alice, name="Corpus")
    for filename, text in CORPUS.items():
        services.document_add(collection=collection, filename=filename, data=text.encode())
    return collection
