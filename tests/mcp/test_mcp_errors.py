"""Tool errors name the problem (issue 25: deep_research with another user's kb logged an unhandled Http404).
In process, through the SDK's own in-memory client; nothing here reaches a worker."""

from __future__ import annotations

import asyncio
import logging

import pytest

from research.api.mcp_server import build_server
from research.jobs.models import ResearchJob
from research.knowledge import services as kb_services

pytestmark = [pytest.mark.django_db(transaction=True)]


def _call(user, name: str, arguments: dict):
    from mcp import Client

    async def go():
        async with Client(build_server(user=user, base_url="http://testserver.example")) as client:
            return await client.call_tool(name, arguments)

    return asyncio.run(go())


@pytest.mark.parametrize("whose", ["another user's", "no one's"])
def test_deep_research_with_a_knowledge_base_you_do_not_own_is_a_tool_error(alice, charlie, caplog, whose):
    kb = 99_999 if whose == "no one's" else kb_services.collection_create(owner=charlie, name="notes").pk
    with caplog.at_level(logging.WARNING):
        result = _call(alice, "deep_research", {"question": "What is in the notes?",
                                               "options": {"engine": "offline", "kb": kb, "web": False}})
    assert result.is_error
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert "No such knowledge base" in text and f"options.kb = {kb}" in text
    assert not ResearchJob.objects.filter(owner=alice).exists()  # nothing was started
    assert not [r for r in caplog.records if "Http404" in r.getMessage() or (r.exc_info and "Http404" in
                                                                              repr(r.exc_info[1]))]
