"""The fake vLLM server itself: wire format, failure injection, concurrency, down/up."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from pydantic import BaseModel

from tests.support.fake_llm import FakeLLM, Reply, example_for_schema

CHAT = [{"role": "user", "content": "hello"}]


def post(fake: FakeLLM, body: dict, **kw) -> httpx.Response:
    kw.setdefault("timeout", 5)
    return httpx.post(f"{fake.base_url}/chat/completions", json={"model": fake.model, **body}, **kw)


def sse_events(resp: httpx.Response) -> list:
    events = []
    for line in resp.text.splitlines():
        if line.startswith("data: "):
            data = line[6:]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def test_models_endpoint_reports_max_model_len() -> None:
    with FakeLLM(model="m1", max_model_len=4096) as fake:
        data = httpx.get(f"{fake.base_url}/models").json()["data"]
    assert data[0]["id"] == "m1"
    assert data[0]["max_model_len"] == 4096


def test_default_responder_echoes_and_reports_usage(fake: FakeLLM) -> None:
    body = post(fake, {"messages": CHAT}).json()
    assert body["choices"][0]["message"]["content"] == "You said: hello"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] > 0
    assert fake.requests[0]["messages"] == CHAT


def test_default_responder_follows_json_schema(fake: FakeLLM) -> None:
    class Step(BaseModel):
        title: str
        need_search: bool

    class Plan(BaseModel):
        title: str
        steps: list[Step]
        count: int | None = None

    fmt = {"type": "json_schema", "json_schema": {"name": "Plan", "schema": Plan.model_json_schema()}}
    content = post(fake, {"messages": CHAT, "response_format": fmt}).json()["choices"][0]["message"]["content"]
    assert Plan.model_validate_json(content).steps[0].title
    assert example_for_schema({"type": "array", "items": {"type": "integer"}, "minItems": 2}) == [1, 1]


def test_stream_has_vllm_chunks_usage_and_done(fake: FakeLLM) -> None:
    fake.set_responder(lambda body: Reply(content="one two three", reasoning="hmm ok"))
    resp = post(fake, {"messages": CHAT, "stream": True, "stream_options": {"include_usage": True}})
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = sse_events(resp)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    thought = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c["choices"])
    assert (text, thought) == ("one two three", "hmm ok")
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_stream_splits_tool_call_arguments_over_chunks(fake: FakeLLM) -> None:
    fake.set_responder(lambda body: Reply(tool_calls=[{"name": "search", "arguments": {"query": "solar panels 2024"}}]))
    events = sse_events(post(fake, {"messages": CHAT, "stream": True}))
    parts = [
        c["choices"][0]["delta"]["tool_calls"][0] for c in events[:-1] if c["choices"][0]["delta"].get("tool_calls")
    ]
    assert len(parts) >= 3
    assert parts[0]["id"] and parts[0]["function"]["name"] == "search" and parts[0]["index"] == 0
    assert all("name" not in p["function"] for p in parts[1:])
    assert json.loads("".join(p["function"]["arguments"] for p in parts)) == {"query": "solar panels 2024"}
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_http_failure_injections_are_queued_in_order(fake: FakeLLM) -> None:
    fake.inject("503")
    fake.inject("429")
    fake.inject("context_overflow")
    assert fake.pending_injections() == ["503", "429", "context_overflow"]
    assert post(fake, {"messages": CHAT}).status_code == 503
    r429 = post(fake, {"messages": CHAT})
    assert r429.status_code == 429 and r429.headers["retry-after"] == "0"
    r400 = post(fake, {"messages": CHAT})
    assert r400.status_code == 400 and "maximum context length" in r400.json()["message"]
    assert post(fake, {"messages": CHAT}).status_code == 200
    with pytest.raises(ValueError):
        fake.inject("nonsense")


def test_truncated_stream_has_no_done_and_a_broken_body(fake: FakeLLM) -> None:
    fake.set_responder(lambda body: Reply(content="a b c d e f g h"))
    fake.inject("truncated_stream")
    received = []
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream(
            "POST", f"{fake.base_url}/chat/completions", json={"messages": CHAT, "stream": True}, timeout=5
        ) as resp:
            for line in resp.iter_lines():
                received.append(line)
    assert "data: [DONE]" not in received
    assert any("content" in line for line in received)


def test_content_injections(fake: FakeLLM) -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}}]
    fake.inject("malformed_json")
    content = post(fake, {"messages": CHAT}).json()["choices"][0]["message"]["content"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)
    fake.inject("unknown_tool")
    call = post(fake, {"messages": CHAT, "tools": tools}).json()["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "no_such_tool"
    fake.inject("endless_tool_calls", times=3)
    for _ in range(3):
        msg = post(fake, {"messages": CHAT, "tools": tools}).json()["choices"][0]["message"]
        assert msg["tool_calls"][0]["function"]["name"] == "search"
    assert post(fake, {"messages": CHAT, "tools": tools}).json()["choices"][0]["message"]["tool_calls"] == []
    fake.inject("think_leak", times=2)
    bare = post(fake, {"messages": CHAT}).json()["choices"][0]["message"]["content"]
    tagged = post(fake, {"messages": CHAT}).json()["choices"][0]["message"]["content"]
    assert "</think>" in bare and "<think>" not in bare and bare.endswith("You said: hello")
    assert tagged.startswith("<think>") and "</think>" in tagged


def test_text_tag_tool_injection_without_openai_tools(fake: FakeLLM) -> None:
    system = '<tools>\n{"type": "function", "function": {"name": "visit", "parameters": {}}}\n</tools>'
    fake.inject("endless_tool_calls")
    content = post(fake, {"messages": [{"role": "system", "content": system}, *CHAT]}).json()["choices"][0]["message"]
    assert content["content"].startswith("<tool_call>") and '"visit"' in content["content"]


def test_real_context_limit_is_enforced() -> None:
    with FakeLLM(max_model_len=1000) as fake:
        small = post(fake, {"messages": CHAT, "max_tokens": 100})
        big = post(fake, {"messages": [{"role": "user", "content": "x" * 4000}], "max_tokens": 100})
    assert small.status_code == 200
    assert big.status_code == 400 and "maximum context length is 1000" in big.json()["message"]


def test_api_key_is_checked_when_configured() -> None:
    with FakeLLM(api_key="sekret") as fake:
        assert post(fake, {"messages": CHAT}).status_code == 401
        assert post(fake, {"messages": CHAT}, headers={"Authorization": "Bearer sekret"}).status_code == 200


def test_responder_status_and_error_body(fake: FakeLLM) -> None:
    fake.set_responder(lambda body: Reply(status=404, error_body={"object": "error", "message": "model nope"}))
    resp = post(fake, {"messages": CHAT})
    assert resp.status_code == 404 and resp.json()["message"] == "model nope"


def test_a_hanging_request_does_not_block_others(fake: FakeLLM) -> None:
    fake.inject("hang")
    outcome: list[str] = []

    def hang() -> None:
        try:
            post(fake, {"messages": CHAT}, timeout=httpx.Timeout(5, read=1.5))
        except httpx.ReadTimeout:
            outcome.append("timeout")

    t = threading.Thread(target=hang)
    t.start()
    time.sleep(0.1)
    start = time.monotonic()
    assert post(fake, {"messages": CHAT}).status_code == 200
    assert time.monotonic() - start < 1.0
    t.join()
    assert outcome == ["timeout"]


def test_paced_streams_are_served_concurrently() -> None:
    body = {"messages": CHAT, "stream": True}
    with FakeLLM(lambda b: Reply(content="w " * 10), ttft=0.2, tokens_per_s=50) as fake, httpx.Client() as http:
        url = f"{fake.base_url}/chat/completions"
        start = time.monotonic()
        http.post(url, json=body)
        single = time.monotonic() - start
        start = time.monotonic()
        threads = [threading.Thread(target=http.post, args=(url,), kwargs={"json": body}) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
    assert len(fake.requests) == 21
    assert elapsed < single * 5  # one stream takes ~0.4 s; twenty in series would take ~8 s


def test_down_refuses_connections_and_up_comes_back_on_the_same_port(fake: FakeLLM) -> None:
    port = fake.port
    with httpx.Client(timeout=2) as http:  # a pooled keep-alive connection must die too
        assert http.get(f"{fake.base_url}/models").status_code == 200
        fake.down()
        with pytest.raises(httpx.TransportError):
            http.get(f"{fake.base_url}/models")
        fake.up()
        assert fake.port == port
        assert http.get(f"{fake.base_url}/models").status_code == 200


def test_batching_model_slows_each_request_as_the_batch_grows() -> None:
    fake = FakeLLM(tokens_per_s=10.0, batch_slowdown=0.5)
    assert fake._pace() == pytest.approx(0.1)
    with fake._decoding():
        assert fake._pace() == pytest.approx(0.1)  # alone: full speed
        with fake._decoding(), fake._decoding():
            assert fake._pace() == pytest.approx(0.2)  # three at once: 1 + 0.5 × 2
    assert FakeLLM(tokens_per_s=10.0)._pace() == pytest.approx(0.1)  # default: independent requests
