"""LLMClient against the fake vLLM server over real HTTP (no mocks of httpx)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from research.llm.client import LLMClient
from research.llm.factory import client_from_settings, server_available
from research.llm.parsing import clip_text, loads_lenient, parse_structured, parse_tool_call_tags, split_reasoning
from research.llm.profiles import PROFILES, get_profile
from research.llm.stream import VisibleFilter
from research.llm.types import CallRecord, LLMBadRequest, LLMUnavailable, StructuredOutputError
from research.llm.window import DEFAULT_CONTEXT_WINDOW
from tests.support.fake_llm import SEARCH_TOOL, FakeLLM, Reply

USER = [{"role": "user", "content": "What is new in solar power?"}]


class Step(BaseModel):
    title: str
    need_search: bool


class Plan(BaseModel):
    title: str
    steps: list[Step]


PLAN_JSON = '{"title": "Solar", "steps": [{"title": "Find data", "need_search": true}]}'


def chars_sent(body: dict) -> int:
    return sum(len(m.get("content") or "") for m in body["messages"])


# --------------------------------------------------------------------------- streaming and plain chat


def test_plain_chat_returns_content_usage_and_a_record(
    fake: FakeLLM, client: LLMClient, records: list[CallRecord]
) -> None:
    result = client.chat(USER, agent="coordinator")
    assert result.content == "You said: What is new in solar power?"
    assert result.finish_reason == "stop" and result.model == "test-model"
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert "stream" not in fake.requests[0]
    assert records == [
        CallRecord(
            agent="coordinator",
            model="test-model",
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            seconds=records[0].seconds,
            ok=True,
        )
    ]


@pytest.mark.parametrize("profile", ["generic", "qwen3-instruct"])
def test_streaming_delivers_deltas_in_order(fake: FakeLLM, make_client: Callable[..., LLMClient], profile: str) -> None:
    # qwen3 holds a thinking model's first characters back to catch a leaked </think>;
    # Instruct-2507 models never think, so they stream at once like the generic profile.
    if profile == "generic":
        client = make_client(profile="generic")
    else:
        client = make_client(profile="qwen3", model="Qwen/Qwen3-30B-A3B-Instruct-2507")
    text = "Solar capacity grew quickly in 2024 across many regions of the world."
    fake.set_responder(lambda body: Reply(content=text))
    deltas: list[str] = []
    result = client.chat(USER, on_delta=deltas.append)
    assert len(deltas) > 3
    assert "".join(deltas) == text == result.content
    body = fake.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert result.usage.completion_tokens == len(text.split())  # from the server's usage chunk


def test_request_carries_model_temperature_max_tokens_and_profile_extras(
    fake: FakeLLM, make_client: Callable[..., LLMClient]
) -> None:
    make_client(profile="agentcpm-explore").chat(USER, temperature=0.7, max_tokens=300)
    body = fake.requests[0]
    assert body["model"] == "test-model" and body["temperature"] == 0.7 and body["max_tokens"] == 300
    assert body["top_k"] == 20  # agentcpm-explore's sampling extras
    assert "seed" not in body  # sent only when asked for


def test_a_seed_is_sent_when_given(fake: FakeLLM, make_client: Callable[..., LLMClient]) -> None:
    make_client().chat(USER, seed=4242)
    assert fake.requests[0]["seed"] == 4242


# --------------------------------------------------------------------------- tool calls


def test_native_tool_calls_streamed_are_reassembled(fake: FakeLLM, client: LLMClient) -> None:
    args = {"query": "solar module prices per watt 2024", "extra": [1, 2, 3]}
    fake.set_responder(
        lambda body: Reply(tool_calls=[{"name": "search", "arguments": args}, {"name": "search", "arguments": {}}])
    )
    deltas: list[str] = []
    result = client.chat(USER, tools=[SEARCH_TOOL], on_delta=deltas.append)
    assert [c.arguments for c in result.tool_calls] == [args, {}]
    assert all(c.id and c.name == "search" and not c.parse_error for c in result.tool_calls)
    assert result.finish_reason == "tool_calls" and deltas == []
    assert fake.requests[0]["tools"] == [SEARCH_TOOL] and fake.requests[0]["tool_choice"] == "auto"
    # The assistant turn round-trips into the next request in OpenAI wire format.
    msg = result.assistant_message()
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == args


def test_native_tool_calls_plain_and_bad_arguments(fake: FakeLLM, client: LLMClient) -> None:
    fake.set_responder(lambda body: Reply(tool_calls=[{"name": "search", "arguments": '{"query": "x",}'}]))
    assert client.chat(USER, tools=[SEARCH_TOOL]).tool_calls[0].arguments == {"query": "x"}  # repaired
    fake.set_responder(lambda body: Reply(tool_calls=[{"name": "search", "arguments": '{"query": '}]))
    call = client.chat(USER, tools=[SEARCH_TOOL]).tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == '{"query": ' and "not valid JSON" in call.parse_error


def test_unknown_tool_is_flagged(fake: FakeLLM, client: LLMClient) -> None:
    fake.inject("unknown_tool")
    call = client.chat(USER, tools=[SEARCH_TOOL]).tool_calls[0]
    assert call.name == "no_such_tool" and "unknown tool" in call.parse_error and "search" in call.parse_error


def test_native_profile_falls_back_to_tool_call_tags_in_content(fake: FakeLLM, client: LLMClient) -> None:
    # A hermes model served without --tool-call-parser prints its calls as text.
    fake.set_responder(
        lambda body: Reply(
            content='Let me look.\n<tool_call>\n{"name": "search", "arguments": {"query": "q"}}\n</tool_call>'
        )
    )
    result = client.chat(USER, tools=[SEARCH_TOOL])
    assert result.content == "Let me look."
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", {"query": "q"})]


def test_text_tag_profile_describes_tools_and_parses_tags(fake: FakeLLM, make_client: Callable[..., LLMClient]) -> None:
    client = make_client(profile="tongyi-deepresearch")
    fake.set_responder(
        lambda body: Reply(
            content=(
                "<think>I should search first.</think>\n"
                '<tool_call>\n{"name": "search", "arguments": {"query": "solar 2024"}}\n</tool_call>'
            )
        )
    )
    system = {"role": "system", "content": "You are a researcher."}
    result = client.chat([system, *USER], tools=[SEARCH_TOOL])
    body = fake.requests[0]
    assert "tools" not in body
    assert body["messages"][0]["content"].startswith("You are a researcher.")
    assert "<tools>" in body["messages"][0]["content"] and '"name": "search"' in body["messages"][0]["content"]
    assert "<tool_response>" in body["stop"]
    assert result.reasoning == "I should search first."
    assert result.content == "" and result.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", {"query": "solar 2024"})]

    # Next round: the tool result goes back as a <tool_response> user turn; the answer is unwrapped.
    fake.set_responder(lambda body: Reply(content="<think>Enough.</think><answer>Solar grew 30%.</answer>"))
    history = [
        system,
        *USER,
        result.assistant_message(),
        {"role": "tool", "tool_call_id": result.tool_calls[0].id, "content": "Solar grew 30% [1]"},
    ]
    deltas: list[str] = []
    final = client.chat(history, tools=[SEARCH_TOOL], on_delta=deltas.append)
    sent = fake.requests[1]["messages"]
    assert sent[2]["role"] == "assistant" and "<tool_call>" in sent[2]["content"] and "tool_calls" not in sent[2]
    assert sent[3] == {"role": "user", "content": "<tool_response>\nSolar grew 30% [1]\n</tool_response>"}
    assert final.content == "Solar grew 30%." and final.tool_calls == []
    assert "".join(deltas) == "Solar grew 30%."


def test_text_tag_parser_handles_code_blocks_and_broken_json() -> None:
    text = (
        'Run it.<tool_call>{"name": "PythonInterpreter", "arguments": {}}\n<code>\nprint(1 + 1)\n</code></tool_call>'
        "<tool_call>{not json</tool_call>"
        '<tool_call>{"name": "visit", "arguments": {"url": ["https://a.example"]}}'  # unclosed: stopped by stop string
    )
    rest, calls = parse_tool_call_tags(text)
    assert rest == "Run it."
    assert calls[0].name == "PythonInterpreter" and calls[0].arguments == {"code": "print(1 + 1)"}
    assert calls[1].parse_error and calls[1].name == ""
    assert calls[2].arguments == {"url": ["https://a.example"]}


# --------------------------------------------------------------------------- think stripping


@pytest.mark.parametrize(
    ("raw", "content", "reasoning"),
    [
        ("<think>plan it</think>\n\nAnswer.", "Answer.", "plan it"),
        ("plan it\n</think>\n\nAnswer.", "Answer.", "plan it"),  # leaked: template opened <think>
        ("<think>\n\n</think>\n\nAnswer.", "Answer.", ""),  # Qwen3 non-thinking mode
        ("<think>cut off while thinking", "", "cut off while thinking"),
        ("No thinking here.", "No thinking here.", ""),
    ],
)
def test_split_reasoning(raw: str, content: str, reasoning: str) -> None:
    assert split_reasoning(raw) == (content, reasoning)


@pytest.mark.parametrize("kind", ["think_leak_bare", "think_leak_tags"])
def test_think_leaks_are_stripped_from_content_and_deltas(fake: FakeLLM, client: LLMClient, kind: str) -> None:
    fake.set_responder(lambda body: Reply(content="The answer is 42."))
    fake.inject(kind, times=2)
    plain = client.chat(USER)
    deltas: list[str] = []
    streamed = client.chat(USER, on_delta=deltas.append)
    for result in (plain, streamed):
        assert result.content == "The answer is 42."
        assert "think it through" in result.reasoning
    assert "".join(deltas) == "The answer is 42."


def test_reasoning_fields_go_to_reasoning(fake: FakeLLM, client: LLMClient) -> None:
    fake.set_responder(lambda body: Reply(content="Done.", reasoning="Step one, step two."))
    deltas: list[str] = []
    for result in (client.chat(USER), client.chat(USER, on_delta=deltas.append)):
        assert (result.content, result.reasoning) == ("Done.", "Step one, step two.")
    assert "".join(deltas) == "Done."


def test_visible_filter_handles_tags_split_across_chunks() -> None:
    raw = "<think>secret plan</think>Hello <tool_call>{}</tool_call>world<answer>!</answer>"
    f = VisibleFilter(hide=("think", "tool_call"), unwrap=("answer",), holdback=1024)
    out = "".join(f.feed(ch) for ch in raw) + f.finish()
    assert out == "Hello world!"
    leaked = VisibleFilter(hide=("think",), unwrap=(), holdback=1024)
    out = "".join(leaked.feed(ch) for ch in "secret plan\n</think>\n\nHi there") + leaked.finish()
    assert out == "Hi there"
    instant = VisibleFilter(hide=("think",), unwrap=(), holdback=0)
    assert instant.feed("Hello") == "Hello"  # no holdback: text flows at once


# --------------------------------------------------------------------------- structured output


def test_structured_happy_path_sends_json_schema(fake: FakeLLM, client: LLMClient) -> None:
    fake.set_responder(lambda body: Reply(content=PLAN_JSON))
    plan = client.structured(USER, Plan, agent="planner")
    assert plan == Plan(title="Solar", steps=[Step(title="Find data", need_search=True)])
    fmt = fake.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Plan" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == Plan.model_json_schema()


def test_structured_repairs_fences_think_and_trailing_commas(fake: FakeLLM, client: LLMClient) -> None:
    messy = (
        "<think>make a plan</think>Here is the plan:\n```json\n"
        "{'title': 'Solar', 'steps': [{'title': 'Find data', 'need_search': True,},],}\n```\nDone."
    )
    fake.set_responder(lambda body: Reply(content=messy))
    assert client.structured(USER, Plan).steps[0].need_search is True
    assert len(fake.requests) == 1


def test_loads_lenient_keeps_strings_intact() -> None:
    assert loads_lenient('noise {"a": "x, }", "b": [1, 2,], "c": "it\'s"} trailing') == {
        "a": "x, }",
        "b": [1, 2],
        "c": "it's",
    }
    assert loads_lenient('{"a": "unterminated') == {"a": "unterminated"}  # closed by json-repair
    with pytest.raises(ValueError, match="no JSON object"):
        loads_lenient("I cannot answer that.")


def test_structured_retries_with_the_error_fed_back(fake: FakeLLM, client: LLMClient) -> None:
    fake.set_responder(lambda body: Reply(content=PLAN_JSON))
    fake.inject("malformed_json")
    plan = client.structured(USER, Plan)
    assert plan.title == "Solar"
    assert len(fake.requests) == 2
    retry = fake.requests[1]["messages"]
    assert retry[:1] == USER
    assert retry[1]["role"] == "assistant" and "malformed" in retry[1]["content"]
    assert retry[2]["role"] == "user" and "could not be used" in retry[2]["content"]
    assert "Plan schema" in retry[2]["content"] and "title" in retry[2]["content"]


def test_structured_feeds_back_validation_errors_then_gives_up(fake: FakeLLM, client: LLMClient) -> None:
    fake.set_responder(lambda body: Reply(content='{"title": "Solar", "steps": [{"title": 3}]}'))
    with pytest.raises(StructuredOutputError) as info:
        client.structured(USER, Plan, max_attempts=3)
    assert len(fake.requests) == 3
    assert "steps.0.need_search" in str(info.value) and info.value.attempts == 3
    assert "steps.0.need_search" in fake.requests[2]["messages"][-1]["content"]
    assert info.value.raw.startswith('{"title"')


def test_over_long_strings_and_lists_are_trimmed_not_failed() -> None:
    from research.agents.types import Plan as RealPlan
    from research.agents.types import SlideOutline

    runaway = "Solid-state battery manufacturing " * 20  # a title that ran on until the length limit
    raw = json.dumps({"title": "T", "steps": [{"id": "s1", "title": runaway}]})
    with pytest.raises(ValueError, match="at most 300 characters"):
        parse_structured(raw, RealPlan)  # not on an attempt that can still ask again
    plan = parse_structured(raw, RealPlan, clip=True)
    title = plan.steps[0].title
    assert len(title) <= 300 and title.endswith("…") and runaway.startswith(title[:-1])
    assert not title[:-1].endswith(" ")  # cut at a word break
    zh = "固态电池的制造" * 80  # no spaces: a plain cut
    assert len(parse_structured(json.dumps({"title": zh, "steps": []}), RealPlan, clip=True).title) == 300
    deck = parse_structured(json.dumps({"title": "D", "slides": [{"title": "S", "bullets": list("abcdefg")}]}),
                            SlideOutline, clip=True)
    assert deck.slides[0].bullets == list("abcde")
    # Another error beside an over-long field still fails, naming it.
    with pytest.raises(ValueError, match=r"steps\.0\.need_search"):
        parse_structured(json.dumps({"title": runaway * 2, "steps": [{"id": "s1", "title": "x",
                                                                      "need_search": "maybe"}]}), RealPlan,
                         clip=True)
    assert clip_text("short", 10) == "short" and clip_text("abcdef", 1) == "a"


def test_structured_keeps_a_plan_whose_reply_ran_out_in_a_title(fake: FakeLLM, client: LLMClient) -> None:
    from research.agents.types import Plan as RealPlan

    # Every attempt runs out of tokens inside the third step's title (as a 135M model did): the last
    # attempt's repaired reply is used with the title trimmed, instead of failing the job.
    cut = '{"title": "Solar", "steps": [{"id": "s1", "title": "Costs"}, {"id": "s2", "title": "' + "very " * 200
    fake.set_responder(lambda body: Reply(content=cut, finish_reason="length"))
    plan = client.structured(USER, RealPlan, max_attempts=3)
    assert len(fake.requests) == 3  # a cut-off reply is asked again while attempts remain
    assert [s.id for s in plan.steps] == ["s1", "s2"] and plan.steps[1].title.endswith("…")


# --------------------------------------------------------------------------- retries and failures


@pytest.mark.parametrize("kind", ["503", "429", "truncated_stream"])
def test_transient_failures_are_retried_then_succeed(fake: FakeLLM, client: LLMClient, kind: str) -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta"
    fake.set_responder(lambda body: Reply(content=text))
    fake.inject(kind, times=2)
    deltas: list[str] = []
    result = client.chat(USER, on_delta=deltas.append)
    assert result.content == text
    assert "".join(deltas) == text  # nothing duplicated by the retried stream
    assert len(fake.requests) == 3


def test_truncated_plain_answer_is_retried(fake: FakeLLM, client: LLMClient) -> None:
    fake.inject("truncated_stream")
    assert client.chat(USER).content.startswith("You said")
    assert len(fake.requests) == 2


def test_gives_up_after_max_retries(fake: FakeLLM, make_client: Callable[..., LLMClient], records) -> None:
    fake.inject("503", times=10)
    with pytest.raises(LLMUnavailable, match="503"):
        make_client(max_retries=2).chat(USER, agent="researcher")
    assert len(fake.requests) == 3
    assert records[-1].ok is False and "LLMUnavailable" in records[-1].error and records[-1].agent == "researcher"


def test_server_down_raises_unavailable_quickly(fake: FakeLLM, make_client: Callable[..., LLMClient]) -> None:
    client = make_client(max_retries=4, context_window=8192)
    fake.down()
    start = time.monotonic()
    with pytest.raises(LLMUnavailable):
        client.chat(USER)
    assert time.monotonic() - start < 3


def test_server_coming_back_during_retries(fake: FakeLLM, make_client: Callable[..., LLMClient]) -> None:
    client = make_client(max_retries=20, backoff_base=0.05, backoff_max=0.1, context_window=8192)
    assert client.chat(USER).content  # a pooled keep-alive connection exists now
    fake.down()
    timer = threading.Timer(0.4, fake.up)
    timer.start()
    try:
        assert client.chat(USER).content.startswith("You said")
    finally:
        timer.cancel()


def test_a_hanging_server_is_bounded_by_the_timeout(fake: FakeLLM, make_client: Callable[..., LLMClient]) -> None:
    client = make_client(timeout=0.5, max_retries=0)
    fake.inject("hang")
    start = time.monotonic()
    with pytest.raises(LLMUnavailable, match="timeout"):
        client.chat(USER)
    assert time.monotonic() - start < 3.0
    fake.inject("hang")
    start = time.monotonic()
    assert make_client(timeout=0.5, max_retries=1).chat(USER, on_delta=lambda d: None).content
    assert time.monotonic() - start < 3.5


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_fail_fast(fake: FakeLLM, client: LLMClient, status: int, records) -> None:
    fake.set_responder(lambda body: Reply(status=status, error_body={"object": "error", "message": "nope"}))
    with pytest.raises(LLMBadRequest, match="nope") as info:
        client.chat(USER)
    assert info.value.status == status
    assert len(fake.requests) == 1
    assert records[-1].ok is False and "LLMBadRequest" in records[-1].error


def test_a_failing_on_call_hook_does_not_break_the_call(fake: FakeLLM, make_client: Callable[..., LLMClient]) -> None:
    def boom(record: CallRecord) -> None:
        raise RuntimeError("accounting down")

    assert make_client(on_call=boom).chat(USER).content


# --------------------------------------------------------------------------- context window


def test_context_window_comes_from_the_server_and_is_cached() -> None:
    with FakeLLM(max_model_len=12345) as fake:
        client = LLMClient(base_url=fake.base_url, model=fake.model)
        assert client.context_window() == 12345
        fake.max_model_len = 1
        assert client.context_window() == 12345
        assert LLMClient(base_url=fake.base_url, model="x", context_window=2048).context_window() == 2048
    gone = LLMClient(base_url=fake.base_url, model="x", timeout=0.5)
    assert gone.context_window() == DEFAULT_CONTEXT_WINDOW == 8192  # server gone: a safe default


def test_count_tokens_is_conservative(client: LLMClient) -> None:
    english = "The quick brown fox jumps over the lazy dog. " * 20
    assert client.count_tokens(english) >= len(english) / 4
    assert client.count_tokens("太阳能发电") >= 5
    assert client.count_tokens("") == 0


def test_fit_messages_with_a_huge_tool_result() -> None:
    with FakeLLM(max_model_len=4096) as fake:
        client = LLMClient(base_url=fake.base_url, model=fake.model)
        system = {"role": "system", "content": "You are a careful researcher. " * 10}
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}],
        }
        messages = [
            system,
            {"role": "user", "content": "Research solar power."},
            call,
            {"role": "tool", "tool_call_id": "c1", "content": "HEAD " + "page text " * 50_000 + " TAIL"},
            {"role": "tool", "tool_call_id": "c1", "content": "中文内容" * 5_000},
        ]
        fitted = client.fit_messages(messages, reserve=1024)
        assert client._messages_tokens(fitted) + 1024 <= 4096
        assert fitted[0] == system and fitted[1] == messages[1]
        assert fitted[3]["content"].startswith("HEAD") and fitted[3]["content"].endswith("TAIL")
        assert "truncated" in fitted[3]["content"]
        assert messages[3]["content"].endswith("TAIL") and len(messages[3]["content"]) > 100_000  # input untouched

        # chat() fits by itself; the fake enforces max_model_len like vLLM would.
        result = client.chat(messages, max_tokens=512)
        assert result.content
        assert fake.requests[-1]["max_tokens"] == 512


def test_fit_messages_drops_old_rounds_when_cutting_is_not_enough() -> None:
    client = LLMClient(base_url="http://127.0.0.1:9/v1", model="m", context_window=2048)
    messages: list[dict] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for i in range(60):
        messages.append(
            {
                "role": "assistant",
                "content": f"round {i}",
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "s", "arguments": "{}"}}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} " * 40})
    fitted = client.fit_messages(messages, reserve=512)
    assert client._messages_tokens(fitted) + 512 <= 2048
    assert fitted[:2] == messages[:2] and fitted[-1]["content"].startswith("result 59")
    ids = [m.get("tool_call_id") for m in fitted if m["role"] == "tool"]
    calls = [m["tool_calls"][0]["id"] for m in fitted if m["role"] == "assistant"]
    assert ids == calls  # no orphaned tool results
    client.close()


@pytest.mark.parametrize("window", [1024, 4096, 32768])
def test_fit_messages_always_fits_random_conversations(window: int) -> None:
    rng = random.Random(window)
    client = LLMClient(base_url="http://127.0.0.1:9/v1", model="m", context_window=window)
    for _ in range(15):
        messages: list[dict] = [{"role": "system", "content": "rules " * rng.randint(1, 3000)}]
        messages.append({"role": "user", "content": "研究" * rng.randint(1, 20000)})
        for i in range(rng.randint(0, 12)):
            call = {"id": f"c{i}", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}
            messages.append({"role": "assistant", "content": "ok " * rng.randint(0, 500), "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "data " * rng.randint(1, 60000)})
        reserve = window // 4
        fitted = client.fit_messages(messages, reserve=reserve)
        assert client._messages_tokens(fitted) + reserve <= window
        assert fitted[0]["role"] == "system" and fitted[1]["role"] == "user"
    client.close()


def test_context_overflow_answer_shrinks_and_retries(fake: FakeLLM) -> None:
    fake.max_model_len = 4096
    client = LLMClient(base_url=fake.base_url, model=fake.model, backoff_base=0.01)
    big = [{"role": "system", "content": "sys"}, {"role": "user", "content": "fact " * 2400}]
    fake.inject("context_overflow")
    assert client.chat(big, max_tokens=256).content
    assert len(fake.requests) == 2
    assert chars_sent(fake.requests[1]) < chars_sent(fake.requests[0])
    client.close()


def test_max_tokens_never_overflows_the_window(fake: FakeLLM) -> None:
    fake.max_model_len = 2048
    client = LLMClient(base_url=fake.base_url, model=fake.model)
    client.chat([{"role": "user", "content": "word " * 1000}], max_tokens=5000)
    client.chat([{"role": "user", "content": "word " * 1000}])
    assert len(fake.requests) == 2  # the fake (like vLLM) would have answered 400 to an overflow
    for body in fake.requests:
        assert client._messages_tokens(body["messages"]) + body["max_tokens"] <= 2048
    client.close()


# --------------------------------------------------------------------------- concurrency


def test_parallel_streams_finish_in_about_one_request_time() -> None:
    text = " ".join(f"w{i}" for i in range(20))
    with FakeLLM(lambda body: Reply(content=text), ttft=0.3, tokens_per_s=100) as fake:
        client = LLMClient(base_url=fake.base_url, model=fake.model, context_window=8192)
        start = time.monotonic()
        client.chat(USER, on_delta=lambda d: None)
        single = time.monotonic() - start
        results: list[str] = []
        lock = threading.Lock()

        def one() -> None:
            out = client.chat(USER, on_delta=lambda d: None).content
            with lock:
                results.append(out)

        threads = [threading.Thread(target=one) for _ in range(20)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        client.close()
    assert results == [text] * 20
    assert elapsed < single * 5, (elapsed, single)  # serial would be ~20× single


# --------------------------------------------------------------------------- profiles, factory, imports


def test_profiles() -> None:
    assert set(PROFILES) == {"qwen3", "tongyi-deepresearch", "agentcpm-explore", "generic"}
    assert get_profile("nope").name == "generic"
    assert get_profile("tongyi-deepresearch").tool_mode == "text_tags"
    assert "--tool-call-parser hermes" in get_profile("qwen3").vllm_serve
    assert "--tool-call-parser" not in get_profile("tongyi-deepresearch").vllm_serve
    for profile in PROFILES.values():
        assert profile.vllm_serve.startswith("vllm serve ")


def test_client_from_settings(settings, fake: FakeLLM) -> None:
    settings.LLM_BASE_URL = fake.base_url
    settings.LLM_MODEL = "main-model"
    settings.LLM_REASONING_MODEL = "thinker"
    settings.LLM_PROFILE = "tongyi-deepresearch"
    settings.LLM_CONTEXT_WINDOW = 0
    settings.LLM_TIMEOUT_S = 7.0
    settings.LLM_MAX_RETRIES = 1
    seen: list[CallRecord] = []
    client = client_from_settings(on_call=seen.append)
    assert (client.model, client.profile.name, client.timeout, client.max_retries) == (
        "main-model",
        "tongyi-deepresearch",
        7.0,
        1,
    )
    assert client.context_window() == fake.max_model_len
    client.chat(USER)
    assert seen and seen[0].model == "test-model"
    assert client_from_settings(reasoning=True).model == "thinker"
    settings.LLM_REASONING_MODEL = ""
    settings.LLM_CONTEXT_WINDOW = 4096
    fallback = client_from_settings(reasoning=True)
    assert fallback.model == "main-model" and fallback.context_window() == 4096


def test_server_available(fake: FakeLLM) -> None:
    assert server_available(fake.base_url) is True
    fake.down()
    assert server_available(fake.base_url, timeout=0.5) is False


def test_llm_package_does_not_import_django() -> None:
    # research/__init__.py loads the Celery app (which may pull Django in); stand in an empty
    # parent package so only research.llm's own imports are measured.
    code = (
        "import sys, types; pkg = types.ModuleType('research'); pkg.__path__ = ['research']; "
        "sys.modules['research'] = pkg; "
        "import research.llm.client, research.llm.factory, research.llm.profiles, research.llm.tokens, "
        "research.llm.fit, research.llm.messages, research.llm.parsing, research.llm.stream, "
        "research.llm.structured, research.llm.transport, research.llm.types, research.llm.window; "
        "sys.exit(1 if 'django' in sys.modules else 0)"
    )
    root = Path(__file__).resolve().parents[2]
    assert subprocess.run([sys.executable, "-c", code], cwd=root, check=False).returncode == 0
