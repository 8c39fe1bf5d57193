"""Fixtures the agent tests share: the model test double (a module overrides `scenario` to script it) and
an LLMClient pointed at it with fast retries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from research.llm.client import LLMClient
from tests.support.fake_llm import FakeLLM
from tests.support.scenario import Scenario


@pytest.fixture
def scenario() -> Scenario:
    return Scenario()


@pytest.fixture
def fake(scenario: Scenario) -> Iterator[FakeLLM]:
    with FakeLLM(scenario) as server:
        yield server


@pytest.fixture
def llm(fake: FakeLLM) -> Iterator[LLMClient]:
    client = LLMClient(base_url=fake.base_url, model=fake.model, profile="qwen3", timeout=5.0, max_retries=2,
                       backoff_base=0.01, backoff_max=0.02)
    yield client
    client.close()
