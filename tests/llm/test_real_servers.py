"""What real servers do that the happy-path double did not: structured output that steps
down (json_schema → json_object + schema → prompt only), limit-free wire schemas,
lenient JSON, recorded vLLM streams, context windows from /props or /api/show, and the
server's measured speed. All against the fake server over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

from research.llm.client import LLMClient
from research.llm.parsing import loads_lenient, one_line
from research.llm.structured import format_level, strip_limits
from research.llm.types import LLMUnavailable, StructuredOutputError
from research.llm.window import DEFAULT_CONTEXT_WINDOW
from tests.llm import vllm_streams
from tests.support.fake_llm import SEARCH_TOOL, FakeLLM, Reply

USER = [{"role": "user", "content": "Plan research on solar power."}]


class Reply_(BaseModel):
    action: str
    message: str = Field(max_length=40)
    tags: list[str] = Field(default_factory=list, max_length=3)


GOOD = '{"action": "plan", "message": "ok", "tags": ["a"]}'


def _client(fake: FakeLLM, **kw: Any) -> LLMClient:
    args: dict[str, Any] = {
        "base_url": fake.base_url,
        "model": fake.model,
        "profile": "generic",
        "timeout": 5.0,
        "max_retries": 3,
        "backoff_base": 0.01,
        "backoff_max": 0.02,
    }
    args.update(kw)
    return LLMClient(**args)


@pytest.fixture
def server_factory() -> Iterator[Callable[..., FakeLLM]]:
    made: list[FakeLLM] = []

    def make(**kw: Any) -> FakeLLM:
        fake = FakeLLM(lambda body: Reply(content=GOOD), **kw).start()
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.stop()


def _formats(fake: FakeLLM) -> list[str]:
    return [(r.get("response_format") or {}).get("type", "none") for r in fake.requests]


# --------------------------------------------------------------------------- step-down


@pytest.mark.parametrize("status", [400, 422, 500])
def test_refused_json_schema_steps_down_to_json_object_once_per_server(
    server_factory: Callable[..., FakeLLM], status: int
) -> None:
    fake = server_factory(response_formats=("json_object",), format_error_status=status)
    client = _client(fake)
    assert client.structured(USER, Reply_).action == "plan"
    # One refused probe (a 500 is not retried: it names the response format), then json_object.
    assert _formats(fake) == ["json_schema", "json_object"]
    sent = fake.requests[1]["response_format"]
    assert sent["schema"]["properties"]["message"] == {"title": "Message", "type": "string"}  # no maxLength
    assert "maxItems" not in json.dumps(sent["schema"])
    assert "JSON schema:" in fake.requests[1]["messages"][-1]["content"]  # the model sees the schema
    assert format_level(fake.base_url, fake.model) == 1
    # The level is remembered for this server: a new client does not pay for the probe.
    _client(fake).structured(USER, Reply_)
    assert _formats(fake)[2:] == ["json_object"]


def test_server_without_any_json_mode_gets_prompt_only(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory(response_formats=(), format_error_status=500)
    client = _client(fake)
    assert client.structured(USER, Reply_).message == "ok"
    assert _formats(fake) == ["json_schema", "json_object", "none"]
    assert "response_format" not in fake.requests[-1]
    assert "JSON schema:" in fake.requests[-1]["messages"][-1]["content"]


def test_retry_after_a_parse_failure_keeps_the_schema_hint(server_factory: Callable[..., FakeLLM]) -> None:
    answers = iter(["Sure! Here is my plan: first search.", GOOD])
    fake = server_factory(response_formats=(), format_error_status=400)
    fake.set_responder(lambda body: Reply(content=next(answers)) if "response_format" not in body else Reply())
    client = _client(fake)
    assert client.structured(USER, Reply_).action == "plan"
    retry = fake.requests[-1]["messages"]
    assert retry[0]["content"].startswith(USER[0]["content"]) and "JSON schema:" in retry[0]["content"]
    assert retry[-1]["role"] == "user" and "could not be used" in retry[-1]["content"]


def test_limits_left_out_of_the_wire_schema_are_still_enforced(server_factory: Callable[..., FakeLLM]) -> None:
    too_long = json.dumps({"action": "plan", "message": "x" * 100, "tags": ["a", "b", "c", "d"]})
    answers = iter([too_long, GOOD])
    fake = server_factory()
    fake.set_responder(lambda body: Reply(content=next(answers)))
    assert _client(fake).structured(USER, Reply_).message == "ok"
    sent = fake.requests[0]["response_format"]["json_schema"]["schema"]
    assert "maxLength" not in json.dumps(sent) and "maxItems" not in json.dumps(sent)
    feedback = fake.requests[1]["messages"][-1]["content"]
    assert "message" in feedback and "40 characters" in feedback and "tags" in feedback


def test_strip_limits_keeps_fields_named_like_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "pattern": "^a"}, "maxLength": {"type": "integer"}},
        "$defs": {"X": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 1}}},
    }
    assert strip_limits(schema) == {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "maxLength": {"type": "integer"}},
        "$defs": {"X": {"type": "array", "items": {"type": "string"}}},
    }


def test_a_reply_cut_mid_json_is_asked_again(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory()
    fake.inject("length_mid_json")
    assert _client(fake).structured(USER, Reply_).action == "plan"
    assert len(fake.requests) == 2
    assert "length limit" in fake.requests[1]["messages"][-1]["content"]


def test_a_stream_cut_by_length_is_parsed_or_fed_back(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory()
    fake.set_responder(lambda body: Reply(sse=vllm_streams.LENGTH_CUT))
    result = _client(fake).chat(USER, on_delta=lambda _: None)
    assert result.finish_reason == "length" and result.content == '{"title": "Sol'


def test_structured_failure_is_one_readable_line(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory()
    fake.set_responder(lambda body: Reply(content="I cannot do that.\nReally."))
    with pytest.raises(StructuredOutputError) as info:
        _client(fake).structured(USER, Reply_, max_attempts=2)
    assert "\n" not in str(info.value) and "Reply_" in str(info.value)


def test_a_server_traceback_becomes_one_line(server_factory: Callable[..., FakeLLM]) -> None:
    trace = (
        'Traceback (most recent call last):\n  File "/srv/app.py", line 12, in create\n    run()\n'
        "RuntimeError: llama_decode returned -3"
    )
    fake = server_factory()
    fake.set_responder(lambda body: Reply(status=500, error_body={"error": {"message": trace}}))
    with pytest.raises(LLMUnavailable) as info:
        _client(fake, max_retries=1).chat(USER)
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text and "RuntimeError: llama_decode returned -3" in text
    assert one_line("Exception in ASGI app\nTraceback (most recent call last):\n  x\nValueError: bad") == (
        "Exception in ASGI app: ValueError: bad"
    )


def test_unrelated_500s_are_still_retried(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory()
    fake.inject("503", times=2)
    assert _client(fake).structured(USER, Reply_).action == "plan"
    assert _formats(fake) == ["json_schema"] * 3  # a plain outage is no reason to step down


# --------------------------------------------------------------------------- lenient JSON

# Malformed replies seen from small models (the kinds DeerFlow's repair tests cover),
# written anew here: each must parse to the expected object.
MALFORMED = [
    ('{"a": 1', {"a": 1}),
    ('{"a": "b", "c": [1, 2', {"a": "b", "c": [1, 2]}),
    ('{"status": done}', {"status": "done"}),
    ('{"a": 1, // a comment\n "b": 2}', {"a": 1, "b": 2}),
    ('{"a": 1, /* block */ "b": 2}', {"a": 1, "b": 2}),
    ("{a: 1, b: 'two'}", {"a": 1, "b": "two"}),
    ('{"text": "line one\nline two"}', {"text": "line one\nline two"}),
    ('{"a": [1, 2,], }', {"a": [1, 2]}),
    ("{'x': True, 'y': None}", {"x": True, "y": None}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('Here you go: {"a": 1} hope it helps', {"a": 1}),
    ('<think>hmm {no}</think>{"a": 1}', {"a": 1}),
    ('{"steps": [{"title": "one", "need_search": true}, {"title": "tw', None),
    ('{"title": "Plan", "steps": [', {"title": "Plan", "steps": []}),
    ('{"q": "say \\"hi\\""}', {"q": 'say "hi"'}),
    ('{"a": 1}}', {"a": 1}),
    ('{"a": NaN}', None),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED)
def test_lenient_json_parses_what_small_models_write(text: str, expected: dict[str, Any] | None) -> None:
    value = loads_lenient(text)
    assert isinstance(value, dict) and value
    if expected is not None:
        assert value == expected


# --------------------------------------------------------------------------- vLLM streams


def test_recorded_vllm_stream_with_reasoning(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory()
    fake.set_responder(lambda body: Reply(sse=vllm_streams.REASONING_THEN_CONTENT))
    deltas: list[str] = []
    result = _client(fake, profile="qwen3").chat(USER, on_delta=deltas.append)
    assert result.content == "Module prices fell in 2024." == "".join(deltas)
    assert result.reasoning == "The user asks about solar prices."
    assert result.usage.completion_tokens == 39 and result.model == "Qwen/Qwen3-30B-A3B-Instruct-2507"


def test_recorded_vllm_stream_with_two_tool_calls(server_factory: Callable[..., FakeLLM]) -> None:
    fetch = {**SEARCH_TOOL, "function": {**SEARCH_TOOL["function"], "name": "fetch"}}  # type: ignore[dict-item]
    fake = server_factory()
    fake.set_responder(lambda body: Reply(sse=vllm_streams.TWO_TOOL_CALLS))
    result = _client(fake).chat(USER, tools=[SEARCH_TOOL, fetch], on_delta=lambda _: None)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("chatcmpl-tool-5b1d0e2c", "search", {"query": "solar module prices 2024"}),
        ("chatcmpl-tool-9e7a4f11", "fetch", {"url": "https://example.org/a"}),
    ]
    assert result.finish_reason == "tool_calls" and not any(c.parse_error for c in result.tool_calls)


@pytest.mark.parametrize("stream", [False, True])
def test_hermes_tool_call_leaking_into_content_is_still_a_call(
    server_factory: Callable[..., FakeLLM], stream: bool
) -> None:
    fake = server_factory()
    fake.inject("hermes_leak")
    deltas: list[str] = []
    result = _client(fake).chat(USER, tools=[SEARCH_TOOL], on_delta=deltas.append if stream else None)
    assert [c.name for c in result.tool_calls] == ["search"] and not result.tool_calls[0].parse_error
    assert "<tool_call>" not in result.content and "<tool_call>" not in "".join(deltas)


# --------------------------------------------------------------------------- context window


def test_explicit_window_wins(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory(max_model_len=9999)
    client = _client(fake, context_window=4096)
    assert client.context_window() == 4096 and client.context_window_source == "LLM_CONTEXT_WINDOW"


def test_window_from_vllm_models(server_factory: Callable[..., FakeLLM]) -> None:
    client = _client(server_factory(max_model_len=12288))
    assert client.context_window() == 12288 and "max_model_len" in client.context_window_source


def _with_routes(fake: FakeLLM, routes: dict[str, dict[str, Any]]) -> None:
    from tests.support import fake_llm

    handler = fake._server.RequestHandlerClass  # type: ignore[union-attr]
    original_get, original_post = handler.do_GET, handler.do_POST

    def do_get(self: Any) -> None:
        if self.path in routes and self.server.fake is fake:
            return self.send_json(200, routes[self.path])
        return original_get(self)

    def do_post(self: Any) -> None:
        if self.path in routes and self.server.fake is fake:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return self.send_json(200, routes[self.path])
        return original_post(self)

    class Routed(fake_llm._Handler):
        pass

    Routed.do_GET = do_get  # type: ignore[method-assign]
    Routed.do_POST = do_post  # type: ignore[method-assign]
    fake._server.RequestHandlerClass = Routed  # type: ignore[union-attr]


def test_window_from_llama_cpp_props(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory(report_window=False)
    _with_routes(fake, {"/props": {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}})
    client = _client(fake)
    assert client.context_window() == 4096 and client.context_window_source == "server /props n_ctx"


def test_window_from_ollama_show(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory(report_window=False)
    _with_routes(
        fake,
        {"/api/show": {"parameters": "temperature 0.7\nnum_ctx 16384", "model_info": {"qwen3.context_length": 40960}}},
    )
    client = _client(fake)
    assert client.context_window() == 16384 and "num_ctx" in client.context_window_source


def test_window_defaults_safely_then_learns_from_the_server_error(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory(report_window=False, max_model_len=2048)
    client = _client(fake)
    assert client.context_window() == DEFAULT_CONTEXT_WINDOW and "default" in client.context_window_source
    long = [{"role": "user", "content": "word " * 3000}]
    assert client.chat(long, max_tokens=100).content == GOOD  # the 400 said 2048: shrunk and retried
    assert len(fake.requests) == 2
    assert client.context_window() == 2048


# --------------------------------------------------------------------------- measured speed


def test_client_learns_the_server_speed(server_factory: Callable[..., FakeLLM]) -> None:
    fake = server_factory(ttft=0.2, tokens_per_s=100)
    fake.set_responder(lambda body: Reply(content=" ".join(["word"] * 40)))
    client = _client(fake)
    assert client.speed().samples == 0
    client.chat(USER, on_delta=lambda _: None)
    client.chat(USER, on_delta=lambda _: None)
    speed = client.speed()
    assert speed.samples == 2
    assert 0.2 <= speed.ttft_s < 2.0
    assert 10 < speed.tokens_per_s <= 150  # 40 tokens paced at 100/s
    assert speed.seconds_for(100) > speed.ttft_s


def test_llama_cpp_format_refusal_is_one_line_without_the_frame() -> None:
    from tests.support.fake_llm import LLAMA_CPP_FORMAT_ERROR

    line = one_line(LLAMA_CPP_FORMAT_ERROR)
    assert "Input should be 'text' or 'json_object'" in line and "File" not in line and "\n" not in line
