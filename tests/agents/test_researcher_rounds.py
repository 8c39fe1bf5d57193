"""The researcher's IterResearch rounds: every round's prompt is a workspace rebuilt from the task, the
evolving report and the last action only, against the real LLMClient and the scripted fake model."""

from __future__ import annotations

from typing import Any

import pytest

from research.agents.engines.llm import LLMEngine
from research.agents.nodes.researcher import OUTLINE_TOKEN_CAP, capped_outline, unwrap_report
from research.agents.types import Plan, PlanStep, RunVariant, StepResult
from research.llm.client import LLMClient
from research.report.citations import citation_numbers
from tests.support.fake_context import FakeContext, FakePage
from tests.support.fake_llm import FakeLLM, Reply, prompt_tokens
from tests.support.scenario import Scenario, agent_of
from tests.support.site import PAGES

QUESTION = "How fast are solar power costs falling?"
WEB = [FakePage(f"https://site.example{p.path}", p.title, p.text) for p in PAGES]
STEP = PlanStep(id="s1", title="Solar power costs and prices", description="Find how solar costs fell.")


def plan_of(steps: int) -> Plan:
    extra = [PlanStep(id=f"s{i}", title=f"Another facet number {i} of the solar question") for i in range(2, steps + 1)]
    return Plan(locale="en-US", title="Solar", steps=[STEP, *extra])


@pytest.fixture
def scenario() -> Scenario:
    return Scenario(research_rounds=12)


def make_ctx(llm: LLMClient, **options: Any) -> FakeContext:
    return FakeContext(question=QUESTION, pages=list(WEB), llm_client=llm, options=dict(options))


def researcher_requests(fake: FakeLLM) -> list[dict[str, Any]]:
    return [r for r in fake.requests if agent_of(r) == "researcher"]


def tool_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def report_in(request: dict[str, Any]) -> str:
    return "".join(m.get("content") or "" for m in request["messages"] if m["role"] == "assistant")


def test_a_rounds_prompt_does_not_grow_with_the_round_number(llm, fake):
    result = LLMEngine().research(make_ctx(llm, max_rounds=14), STEP, plan_of(5), [])
    requests = researcher_requests(fake)
    assert result.notes["rounds"] == len(requests) == 12 and result.notes["stopped"] == "done"
    # Every prompt is: system + task, then at most the last assistant message and its tool results.
    for request in requests[1:]:
        roles = [m["role"] for m in request["messages"]]
        assert roles[:3] == ["system", "user", "assistant"] and set(roles[3:]) == {"tool"}
        ids = {c["id"] for c in request["messages"][2]["tool_calls"]}
        assert {m["tool_call_id"] for m in request["messages"][3:]} == ids
    # The task part is the same every round (the round number is the only difference).
    task = [prompt_tokens({**r, "messages": r["messages"][:2]}) for r in requests]
    assert max(task) - min(task) <= 2, task
    # The largest prompt (round 10 or 11, with the longest report) stays within reach of round 3's.
    sizes = [prompt_tokens(r) for r in requests]
    assert max(sizes[2:]) <= sizes[2] * 1.5, sizes
    # No tool result is ever shown twice: each appears in exactly one round's prompt.
    for index, request in enumerate(requests):
        for text in tool_texts(request):
            others = [r for i, r in enumerate(requests) if i != index]
            assert not any(text in m.get("content", "") for r in others for m in r["messages"] if m["role"] != "tool")
            assert not any(text in tool_texts(r) for r in others)


def test_the_report_carries_forward_from_round_to_round(llm, fake):
    ctx = make_ctx(llm, max_rounds=14)
    result = LLMEngine().research(ctx, STEP, plan_of(3), [])
    requests = researcher_requests(fake)
    first_page = ctx.registry[ctx.fetched[0]]
    # Round 3 read the first page; its cited lines are in every later round's report and the final one,
    # although its text is never shown again.
    assert any(f"Source [{first_page.number}]: " in t for t in tool_texts(requests[2]))
    for request in requests[3:]:
        assert f"[{first_page.number}]" in report_in(request)
        assert not any(f"Source [{first_page.number}]: " in t for t in tool_texts(request))
    assert set(citation_numbers(result.report_md)) == set(result.notes["sources"]) == {s.number for s in ctx.sources()}


def test_an_invented_citation_never_survives_a_round(llm, fake, scenario):
    ctx = make_ctx(llm, max_rounds=14)
    other = ctx._register("https://other.example/x", "Other step's source", "Other text.", "web")

    def inventive(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and reply.tool_calls and reply.content:
            reply.content += f"\n- Invented claim [77]. Borrowed claim [{other.number}]."
        return reply

    fake.set_responder(inventive)
    result = LLMEngine().research(ctx, STEP, plan_of(3), [])
    reports = [report_in(r) for r in researcher_requests(fake)[2:]]
    assert reports and all("Invented claim." in r and "[77]" not in r for r in reports)
    assert all(f"[{other.number}]" not in r for r in reports)
    assert "[77]" not in result.report_md and other.number not in citation_numbers(result.report_md)
    assert result.notes["removed_citations"] >= 2 * len(reports)


def test_a_note_instead_of_the_report_does_not_erase_the_memory(llm, fake, scenario):
    def narrating(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and reply.tool_calls and citation_numbers(report_in(body)):
            reply.content = "Let me search for more."  # narrates the next action instead of restating the report
        return reply

    ctx = make_ctx(llm, max_rounds=14)
    fake.set_responder(narrating)
    result = LLMEngine().research(ctx, STEP, plan_of(3), [])
    last = report_in(researcher_requests(fake)[-1])
    assert "Let me search" not in last and citation_numbers(last)
    first_read = {ctx.registry[url].number for url in ctx.fetched[:2]}
    assert first_read <= set(citation_numbers(result.report_md))


def test_budgets_still_stop_the_rounds_and_the_last_results_are_written_up(llm, fake):
    ctx = make_ctx(llm, max_rounds=6)
    result = LLMEngine().research(ctx, STEP, plan_of(3), [])
    requests = researcher_requests(fake)
    assert result.notes["stopped"] == "rounds" and result.notes["rounds"] == 6 and len(requests) == 7
    final = requests[-1]
    assert "tools" not in final and final["messages"][-1]["role"] == "user"
    assert "Stop using tools now" in final["messages"][-1]["content"]
    # Round 6 read pages; the write-up call folded them into the report.
    pages = [t for t in tool_texts(final) if t.startswith("Source [")]
    read_last = {int(t.split("]", 1)[0].removeprefix("Source [")) for t in pages}
    assert read_last and read_last <= set(citation_numbers(result.report_md))

    tokens = make_ctx(llm, max_rounds=14, step_token_budget=3_000)
    spent = LLMEngine().research(tokens, STEP, plan_of(3), [])
    assert spent.notes["stopped"] == "tokens" and 1 <= spent.notes["rounds"] < 5


def test_a_variant_opens_with_its_query_and_carries_its_focus_and_seed(llm, fake):
    variant = RunVariant(index=1, count=3, seed=4242, emphasis="prefer official statistics",
                         opening_query="solar module prices statistics")
    ctx = make_ctx(llm, max_rounds=6)
    LLMEngine().research(ctx, STEP, plan_of(3), [], variant=variant)
    searches = [p["query"] for kind, p in ctx.events if kind == "step.activity" and p.get("kind") == "search"]
    assert searches[0] == "solar module prices statistics"
    first = researcher_requests(fake)[0]
    # The opening search ran before the first model call: round 1 already sees its results.
    assert tool_texts(first)[0].startswith('Search results for "solar module prices statistics"')
    task = first["messages"][1]["content"]
    assert "## Focus\nThis is run 2 of 3 of this step" in task and "prefer official statistics" in task
    assert all(r["seed"] == 4242 and r["temperature"] == 0.35 for r in researcher_requests(fake))

    fake.requests.clear()
    standard = make_ctx(llm, max_rounds=6)
    LLMEngine().research(standard, STEP, plan_of(3), [])
    plain = researcher_requests(fake)
    assert "## Focus" not in plain[0]["messages"][1]["content"] and len(plain[0]["messages"]) == 2
    assert all("seed" not in r and r["temperature"] == 0.3 for r in plain)


def test_the_plan_outline_is_bounded_whatever_the_plan_size(llm):
    short = capped_outline(llm, plan_of(3), OUTLINE_TOKEN_CAP)
    full = capped_outline(llm, plan_of(12), OUTLINE_TOKEN_CAP)
    assert short.count("\n") == 3 and "…" not in short and "Another facet number 3 of the solar question" in short
    assert full.count("\n") == 12 and "[s12]" in full and "…" in full
    assert llm.count_tokens(full) <= OUTLINE_TOKEN_CAP * 1.1


def test_prior_results_keep_their_citations_across_rounds(llm, fake):
    ctx = make_ctx(llm, max_rounds=4)
    ref = ctx.fetch(WEB[0].url)
    finding = f"- Solar power has become the cheapest source of new electricity. [{ref.number}]"
    prior = [StepResult("s0", "Earlier", finding)]
    step = PlanStep(id="s9", title="Solar power costs and prices", depends_on=["s0"])
    result = LLMEngine().research(ctx, step, plan_of(3), prior)
    assert ref.number in citation_numbers(result.report_md)


def test_a_tagged_report_is_unwrapped():
    assert unwrap_report("Thinking done.\n<report>\n## Costs\nFell 90% [1].\n</report>") == "## Costs\nFell 90% [1]."
    assert unwrap_report("## Costs\nFell 90% [1].") == "## Costs\nFell 90% [1]."
    assert unwrap_report("</report> stray <report>") == "</report> stray <report>"


def test_several_calls_in_one_round_share_the_last_action_slot(llm, fake, scenario):
    def greedy(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and reply.tool_calls and reply.tool_calls[0]["name"] == "fetch_page":
            reply.tool_calls = [{"name": "fetch_page", "arguments": {"url": page.url}} for page in WEB[:8]]
        return reply

    fake.set_responder(greedy)
    ctx = make_ctx(llm, max_rounds=3, action_token_cap=1_800)
    result = LLMEngine().research(ctx, STEP, plan_of(3), [])
    answers = tool_texts(researcher_requests(fake)[2])
    assert len(answers) == 8 and len(ctx.fetched) == 6 and result.notes["fetched"] == 6
    assert all("at most 6 tool calls per round" in a for a in answers[6:])
    assert sum(llm.count_tokens(a) for a in answers) <= 1_800 * 1.1
    assert any(a.endswith("[… truncated]") for a in answers)
    # Each cut at its end, never its head (a near-miss page's subject-check line stays above its source).
    heads = [a.split("\n", 1)[1] if a.startswith("*Subject check") else a for a in answers[:6]]
    assert all(h.startswith("Source [") for h in heads)


def test_a_chinese_step_gets_the_chinese_round_contract(llm, fake):
    ctx = FakeContext(question="中国光伏产业的发展现状如何？", pages=list(WEB), llm_client=llm, locale="zh-CN",
                      options={"max_rounds": 4})
    plan = Plan(locale="zh-CN", title="光伏", steps=[STEP])
    variant = RunVariant(index=0, count=2, seed=1, emphasis="官方统计数据")
    result = LLMEngine().research(ctx, STEP, plan, [], variant=variant)
    first = researcher_requests(fake)[0]["messages"]
    assert first[0]["content"].startswith("# Role: researcher\n\n你是") and "唯一的记忆" in first[0]["content"]
    assert "## Round\n第 1 轮，最多 4 轮" in first[1]["content"] and "请优先关注：官方统计数据" in first[1]["content"]
    assert citation_numbers(result.report_md)


def test_fetching_a_page_again_shows_it_again_without_a_second_fetch(llm, fake, scenario):
    def again(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and "## Round\nRound 3 of" in body["messages"][1]["content"]:
            return Reply(content=reply.content, tool_calls=[{"name": "fetch_page", "arguments": {"url": WEB[0].url}}])
        return reply

    fake.set_responder(again)
    ctx = make_ctx(llm, max_rounds=4)
    LLMEngine().research(ctx, STEP, plan_of(3), [])
    number = ctx.registry[WEB[0].url].number
    assert ctx.fetched.count(WEB[0].url) == 1
    (shown,) = tool_texts(researcher_requests(fake)[3])
    assert shown.startswith(f"Already fetched as [{number}]; here it is again.\nSource [{number}]: ")
