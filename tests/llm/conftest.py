"""Fixtures for the LLM client tests: a fake vLLM server per test and a client factory
with tiny backoffs so retry tests stay fast."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from research.llm.client import LLMClient
from research.llm.types import CallRecord
from tests.support.fake_llm import FakeLLM


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def records() -> list[CallRecord]:
    return []


@pytest.fixture
def make_client(fake: FakeLLM, records: list[CallRecord]) -> Iterator[Callable[..., LLMClient]]:
    made: list[LLMClient] = []

    def make(**overrides: Any) -> LLMClient:
        kwargs: dict[str, Any] = {
            "base_url": fake.base_url,
            "model": fake.model,
            "profile": "qwen3",
            "timeout": 5.0,
            "max_retries": 3,
            "backoff_base": 0.01,
            "backoff_max": 0.05,
            "on_call": records.append,
        }
        kwargs.update(overrides)
        client = LLMClient(**kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def client(make_client: Callable[..., LLMClient]) -> LLMClient:
    return make_client()
