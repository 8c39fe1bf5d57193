"""Fixtures shared by the integration suites."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.scenario import Scenario


@pytest.fixture
def scenario(fake_llm) -> Iterator[Scenario]:
    """A fresh scripted model for this test; the session default is restored afterwards."""
    from tests.support.scenario import research_scenario

    play = Scenario()
    fake_llm.set_responder(play)
    yield play
    fake_llm.set_responder(research_scenario)
