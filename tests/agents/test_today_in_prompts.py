"""The model knows today's date: it is in the user turn of every agent, never in the system prompt."""

from __future__ import annotations

from datetime import UTC, datetime

from research.agents.engines.llm import LLMEngine
from research.agents.text import detect_locale
from research.llm.client import LLMClient
from tests.support.fake_context import FakeContext, FakePage
from tests.support.fake_llm import FakeLLM
from tests.support.scenario import Scenario, agent_of
from tests.support.site import PAGES

QUESTION = "How cheap has solar power become?"


def _text(content: object) -> str:
    return content if isinstance(content, str) else str(content)


def test_every_agent_gets_todays_date_in_the_user_turn_only():
    before = datetime.now(UTC).date().isoformat()
    pages = [FakePage(f"https://site.test{p.path}", p.title, p.text) for p in PAGES if p.kind == "html"]
    with FakeLLM(Scenario(steps=2, step_types=("research", "processing"))) as fake:
        client = LLMClient(base_url=fake.base_url, model=fake.model, profile="qwen3", timeout=5.0)
        ctx = FakeContext(question=QUESTION, pages=pages, llm_client=client, locale=detect_locale(QUESTION))
        engine = LLMEngine()
        engine.coordinate(ctx)
        plan = engine.plan(ctx, max_steps=2)
        results = []
        for step in plan.steps:
            run = engine.research if step.step_type == "research" else engine.process
            results.append(run(ctx, step, plan, results))
        engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
        client.close()
        requests = list(fake.requests)
    days = {before, datetime.now(UTC).date().isoformat()}  # a run across midnight sees either day
    seen = set()
    for request in requests:
        messages = request["messages"]
        system = " ".join(_text(m["content"]) for m in messages if m["role"] == "system")
        first_user = next(_text(m["content"]) for m in messages if m["role"] == "user")
        assert not any(day in system for day in days)  # the system prefix stays the same from day to day
        assert any(f"## Today\n{day}" in first_user for day in days), agent_of(request)
        seen.add(agent_of(request))
    assert {"coordinator", "planner", "researcher", "coder", "reporter"} <= seen
