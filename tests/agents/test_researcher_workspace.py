"""The researcher's fixed workspace budget (research/agents/nodes/workspace.py): a round's prompt stays within
task + budget, the report is compacted to its share without losing a source number, results cut to fit say
so, and the budget fits small context windows. Against the real LLMClient and the scripted fake model."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.engines.llm import LLMEngine
from research.agents.nodes.workspace import (
    REPORT_SHARE,
    SOURCE_TOKEN_CAP,
    WORKSPACE_TOKEN_CAP,
    Memory,
    cite_list,
    is_note,
    plan_budget,
    report_parts,
)
from research.agents.types import Plan, PlanStep
from research.llm.client import LLMClient
from research.llm.tokens import estimate_tokens
from research.report.citations import citation_numbers
from tests.support.fake_context import FakeContext, FakePage
from tests.support.fake_llm import FakeLLM, Reply, prompt_tokens
from tests.support.scenario import Scenario, agent_of
from tests.support.site import PAGES

QUESTION = "How fast are solar power costs falling?"
WEB = [FakePage(f"https://site.example{p.path}", p.title, p.text) for p in PAGES]
STEP = PlanStep(id="s1", title="Solar power costs and prices", description="Find how solar costs fell.")
PLAN = Plan(locale="en-US", title="Solar", steps=[STEP])
NOTE_EN = "(Memory compacted:"
NOTE_ZH = "（记忆已压缩："
TIGHT = 1_000  # a workspace the test site's actions fill (its pages are ~160 tokens, a listing ~700)


@pytest.fixture
def scenario() -> Scenario:
    return Scenario(research_rounds=12)


def make_ctx(llm: LLMClient, **options: Any) -> FakeContext:
    return FakeContext(question=QUESTION, pages=list(WEB), llm_client=llm, options={"max_rounds": 14, **options})


def researcher_requests(fake: FakeLLM) -> list[dict[str, Any]]:
    return [r for r in fake.requests if agent_of(r) == "researcher"]


def view_in(request: dict[str, Any]) -> str:
    return "".join(m.get("content") or "" for m in request["messages"] if m["role"] == "assistant")


def tool_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def task_tokens(request: dict[str, Any]) -> int:
    return prompt_tokens({**request, "messages": request["messages"][:2]})


# ---- whole steps ----------------------------------------------------------------------------------


def test_every_round_fits_the_workspace_budget_and_the_prompt_stays_flat(llm, fake):
    result = LLMEngine().research(make_ctx(llm, workspace_token_cap=TIGHT), STEP, PLAN, [])
    requests = researcher_requests(fake)
    assert result.notes["rounds"] == len(requests) == 12 and result.notes["stopped"] == "done"
    assert result.notes["workspace_tokens"] == TIGHT and result.notes["compactions"] >= 1
    for request in requests:
        # Everything past the task (the report view, the calls, the results) stays within the budget,
        # counted the client's way (its estimate is the conservative one).
        workspace = request["messages"][2:]
        assert llm._fit.messages_tokens(workspace) <= TIGHT + 16 * len(workspace), len(requests)
    sizes = [prompt_tokens(r) for r in requests]
    assert max(sizes[1:]) <= 1.2 * sizes[1], sizes  # issue 32: round 12 within 1.2x of round 2, and every round
    assert len({task_tokens(r) for r in requests}) == 1


def test_the_default_budget_is_what_a_large_window_gets(llm, fake):
    result = LLMEngine().research(make_ctx(llm, max_rounds=3), STEP, PLAN, [])
    assert result.notes["workspace_tokens"] == WORKSPACE_TOKEN_CAP and result.notes["compactions"] == 0


def test_compaction_keeps_every_source_number_in_sight_and_in_the_final_report(llm, fake):
    ctx = make_ctx(llm, workspace_token_cap=TIGHT)
    result = LLMEngine().research(ctx, STEP, PLAN, [])
    requests = researcher_requests(fake)
    views = [view_in(r) for r in requests]
    assert any(NOTE_EN in v for v in views)
    for index, view in enumerate(views[1:], start=1):
        # Every source read before this round is cited in the view, by a kept finding or by the note.
        read = {int(t.split("]", 1)[0].removeprefix("Source [")) for r in requests[:index] for t in tool_texts(r)
                if t.startswith("Source [")}
        assert read <= set(citation_numbers(view)), (index, read, view)
        assert llm.count_tokens(view) <= TIGHT // REPORT_SHARE
    # The final step report: every source this run read, the archived findings back, the note gone.
    assert set(citation_numbers(result.report_md)) == set(result.notes["sources"]) == {s.number for s in ctx.sources()}
    assert len(result.notes["sources"]) >= 8 and NOTE_EN not in result.report_md
    first = ctx.registry[ctx.fetched[0]]
    sentence = first.text.split(". ")[0]
    assert sentence in result.report_md


def test_compaction_never_lets_an_invented_citation_through(llm, fake, scenario):
    ctx = make_ctx(llm, workspace_token_cap=TIGHT)
    other = ctx._register("https://other.example/x", "Other step's source", "Other text.", "web")

    def inventive(body: dict[str, Any]) -> Reply:
        reply = scenario(body)
        if agent_of(body) == "researcher" and reply.tool_calls and reply.content:
            reply.content += f"\n- Invented claim [77]. Borrowed claim [{other.number}]."
        return reply

    fake.set_responder(inventive)
    result = LLMEngine().research(ctx, STEP, PLAN, [])
    assert result.notes["compactions"] >= 1
    assert all("[77]" not in view_in(r) for r in researcher_requests(fake))
    cited = set(citation_numbers(result.report_md))
    assert 77 not in cited and other.number not in cited and cited <= set(result.notes["sources"])


def test_results_get_what_the_report_leaves_and_a_cut_result_says_so(llm, fake):
    LLMEngine().research(make_ctx(llm, workspace_token_cap=TIGHT), STEP, PLAN, [])
    requests = researcher_requests(fake)
    cut = [t for r in requests for t in tool_texts(r) if t.endswith("[… truncated]")]
    assert cut, "the tight budget never cut a result"
    for request in requests[1:]:
        view = llm.count_tokens(view_in(request))
        results = sum(llm.count_tokens(t) for t in tool_texts(request))
        assert view + results <= TIGHT
    # A search listing shows a page already read on one line (its findings are in the report), no URL.
    listings = [t for r in requests for t in tool_texts(r) if t.startswith("Search results for")]
    again = [line for t in listings for line in t.splitlines() if "(already fetched as [" in line]
    assert again and all("URL:" not in line for line in again)
    assert not any(f"URL: {WEB[0].url}\n" in t for t in listings[1:] if f"{WEB[0].title} (already fetched" in t)


@pytest.fixture
def small_fake(scenario: Scenario, request: pytest.FixtureRequest) -> Iterator[FakeLLM]:
    with FakeLLM(scenario, max_model_len=request.param) as server:
        yield server


@pytest.mark.parametrize("small_fake", [4096, 2560], indirect=True)
def test_a_small_context_window_still_works(small_fake):
    llm = LLMClient(base_url=small_fake.base_url, model=small_fake.model, profile="qwen3", timeout=5.0,
                    max_retries=2, backoff_base=0.01, backoff_max=0.02)
    try:
        ctx = make_ctx(llm, max_rounds=8)
        result = LLMEngine().research(ctx, STEP, PLAN, [])
    finally:
        llm.close()
    window = small_fake.max_model_len
    requests = researcher_requests(small_fake)
    assert result.notes["stopped"] in {"done", "rounds"} and len(requests) >= 8
    assert result.notes["workspace_tokens"] < window // 2
    # The fake refuses a prompt that overflows (400); none did, and every request left room to answer.
    assert all(prompt_tokens(r) + int(r.get("max_tokens") or 0) <= window for r in requests)
    assert set(citation_numbers(result.report_md)) == set(result.notes["sources"]) != set()


# ---- the budget and the memory alone ------------------------------------------------------------


def test_the_budget_fits_the_window_and_follows_the_options():
    big = plan_budget(window=32_768, fixed=1_200, options={})
    assert (big.total, big.report, big.source, big.action) == (WORKSPACE_TOKEN_CAP, 2_000, SOURCE_TOKEN_CAP, 0)
    small = plan_budget(window=8_192, fixed=1_200, options={})
    assert small.total == 8_192 - 1_200 - 2_048 - (16 + 81) and small.report == small.total // REPORT_SHARE
    assert plan_budget(window=2_048, fixed=1_900, options={}).total == 400  # the floor; the client fits the rest
    tight = plan_budget(window=32_768, fixed=1_200, options={"workspace_token_cap": 1_000, "action_token_cap": 500})
    assert (tight.total, tight.report, tight.source, tight.action) == (1_000, 250, 750, 500)
    assert tight.results_room(250, 50) == 500 and tight.results_room(900, 90) == 150
    wide = plan_budget(window=32_768, fixed=1_200, options={"report_token_cap": 6_000, "workspace_token_cap": True})
    assert wide.total == WORKSPACE_TOKEN_CAP and wide.report == WORKSPACE_TOKEN_CAP // 2


class Counter:
    """The client's own token estimate, without a server."""

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)


def test_a_report_within_its_cap_is_shown_as_written():
    memory = Memory(Counter(), "en-US", 500)
    report = "### Costs\n\n- Fell 90% [1].\n- Rooftop systems cost $3 a watt [2].\n\nA paragraph [3]."
    memory.update(report)
    assert memory.view == report and memory.compactions == 0 and memory.restore(report) == report


def test_a_chinese_report_gets_the_chinese_note_and_loses_it_at_the_end():
    memory = Memory(Counter(), "zh-CN", 250)
    lines = [f"- 第{n}条发现：光伏组件价格在这一年下降了很多，装机容量继续增长。[{n}]" for n in range(1, 9)]
    memory.update("### 光伏成本\n" + "\n".join(lines))
    assert memory.view.startswith("### 光伏成本\n\n" + NOTE_ZH) and memory.compactions == 1
    assert memory.view.endswith(lines[-1])
    final = memory.restore(memory.view)
    assert NOTE_ZH not in final and set(citation_numbers(final)) == set(range(1, 9))
    assert final.index("[1]") < final.index("[8]")  # the archived findings come back where they were taken from


def test_the_note_lists_numbers_as_ranges_the_citation_grammar_reads():
    assert cite_list([9, 1, 2, 3, 4, 7, 10]) == "[1-4, 7, 9-10]"
    assert citation_numbers(cite_list([1, 2, 3, 4, 7, 9, 10])) == [1, 2, 3, 4, 7, 9, 10]
    assert citation_numbers(cite_list(list(range(1, 46)))) == list(range(1, 46))  # runs stop at 20 apart


_WORDS = st.text(st.sampled_from("abcdefgh ijklmn opqrstu vwxyz 0123456789 ,.%$ 光伏成本"), min_size=1, max_size=120)
_FINDING = st.tuples(_WORDS.map(lambda s: " ".join(s.split()) or "x"),
                     st.lists(st.integers(1, 40), min_size=0, max_size=3), st.sampled_from(["item", "text", "head"]))


def _block(words: str, numbers: list[int], kind: str) -> str:
    cites = "".join(f"[{n}]" for n in numbers)
    if kind == "head":
        return f"## {words}"
    return f"- {words}. {cites}".rstrip() if kind == "item" else f"Note on {words}. {cites}".rstrip()


@settings(max_examples=60, deadline=None)
@given(rounds=st.lists(st.lists(_FINDING, min_size=1, max_size=6), min_size=1, max_size=8),
       cap=st.integers(80, 400))
def test_rounds_of_compaction_lose_no_source_number(rounds, cap):
    """The scripted model's way: each round copies its view and adds findings. Whatever the cap, every
    number ever cited is in each view (kept or in the note), the view stays near its cap, and the final
    report (the last view restored) cites every number and holds no note."""
    memory = Memory(Counter(), "en-US", cap)
    written: set[int] = set()
    text = "### Findings"
    for findings in rounds:
        blocks = [_block(*f) for f in findings]
        text = "\n\n".join([memory.view or text, *blocks])
        written |= set(citation_numbers(text))
        memory.update(text)
        assert written <= set(citation_numbers(memory.view)), memory.view
        assert estimate_tokens(memory.view) <= cap + 40  # the newest block, cut, may pass it by its marker
        assert sum(is_note(p) for p in report_parts(memory.view)) <= 1
    final = memory.restore(memory.view)
    assert written <= set(citation_numbers(final)) and NOTE_EN not in final
    # Every block that was ever written is in the final report (the model here never drops one).
    blocks = {p.text for p in report_parts(text) if not is_note(p)} | set(memory.archive)
    assert all(block in final for block in blocks if not block.startswith("## "))


def test_compaction_cuts_between_blocks_never_inside_one():
    report = "\n".join([
        "## Costs",
        "",
        "Module prices fell by 90% since 2010 [1]. Installers now charge less per watt [2].",
        "",
        "| Year | Price |",
        "|---|---|",
        "| 2010 | $2.00 [3] |",
        "",
        "```",
        "- not a list item [99]",
        "```",
        "",
        "- Rooftop systems cost $3 a watt [4].",
        "  - Incentives cover 30% [5].",
        "- Batteries raise self-use to 70% [6].",
        "",
        "1. Utility solar is cheapest [7].",
        "2. Storage is next [8].",
    ])
    parts = report_parts(report)
    assert [p.text.splitlines()[0] for p in parts] == [
        "## Costs", "Module prices fell by 90% since 2010 [1]. Installers now charge less per watt [2].",
        "| Year | Price |", "```", "- Rooftop systems cost $3 a watt [4].", "- Batteries raise self-use to 70% [6].",
        "1. Utility solar is cheapest [7].", "2. Storage is next [8]."]
    memory = Memory(Counter(), "en-US", 90)
    memory.update(report)
    kept = report_parts(memory.view)
    assert kept[0].text == "## Costs" and is_note(kept[1]) and memory.compactions == 1
    assert all(p.text in report for p in kept if not is_note(p))  # whole blocks, as written
    assert set(citation_numbers(memory.view)) == set(range(1, 9))  # the code block's [99] is no citation
    final = memory.restore(memory.view)
    assert final.startswith("## Costs\n\nModule prices fell") and set(citation_numbers(final)) == set(range(1, 9))
    assert "  - Incentives cover 30% [5]." in final and "```\n- not a list item [99]\n```" in final


def test_uncited_parts_moved_out_are_announced_and_come_back():
    paragraphs = [f"Finding number {n} was not stated by any source we could read, so it stays open." for n in range(8)]
    memory = Memory(Counter(), "en-US", 80)
    memory.update("# Step\n\n" + "\n\n".join(paragraphs))
    assert "(Memory compacted: parts were moved out of view" in memory.view
    assert paragraphs[-1] in memory.view and paragraphs[0] not in memory.view
    final = memory.restore(memory.view + "\n\nOne more line written in the last round.")
    assert all(p in final for p in paragraphs) and NOTE_EN not in final
    assert final.index(paragraphs[0]) < final.index(paragraphs[-1]) < final.index("One more line")


def test_the_newest_parts_keep_the_heading_they_stand_under():
    first = [f"- Module price fact number {n} from the first source [{n}]." for n in range(1, 6)]
    second = [f"- Storage price fact number {n} from another source [{n}]." for n in range(6, 9)]
    report = "# Step\n\n## Modules\n\n" + "\n".join(first) + "\n\n## Storage\n\n" + "\n".join(second)
    memory = Memory(Counter(), "en-US", 110)
    memory.update(report)
    assert estimate_tokens(report) > 110 and memory.compactions == 1
    kept = [p.text for p in report_parts(memory.view)]
    # The leading headings stay on top, then the note; the newest items keep their own heading.
    assert kept[:2] == ["# Step", "## Modules"] and is_note(report_parts(memory.view)[2])
    assert kept[3] == "## Storage" and kept[-1] == second[-1] and first[0] not in kept
    final = memory.restore(memory.view)
    assert [p.text for p in report_parts(final)] == ["# Step", "## Modules", *first, "## Storage", *second]
