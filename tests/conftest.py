"""Shared fixtures: alice and bob own things, charlie is the outsider who gets 404."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.com", "alice-pass-123")


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user("bob", "bob@example.com", "bob-pass-123")


@pytest.fixture
def charlie(db) -> User:
    return User.objects.create_user("charlie", "charlie@example.com", "charlie-pass-123")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def charlie_client(client, charlie):
    client.force_login(charlie)
    return client
