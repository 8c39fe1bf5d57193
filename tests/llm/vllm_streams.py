"""SSE chunks as vLLM's OpenAI server sends them, for replay by the fake server.

Shapes follow vLLM's ``serving_chat`` streaming and its hermes tool parser (see
docs.vllm.ai, "vllm.entrypoints.openai.chat_completion.stream_processor", and the
"Tool Calling" page of vLLM's docs): the first chunk carries only the role and an empty
content; content arrives as ``{"content": …}`` deltas; a hermes tool call starts with a
delta holding ``index``, ``id``, ``type`` and ``function.name`` only (no ``arguments``
key), then ``function.arguments`` fragments that carry only ``index``; the finish chunk
has ``finish_reason`` plus vLLM's ``stop_reason``; with ``stream_options.include_usage``
every chunk carries ``"usage": null`` and a last chunk has no choices and the usage.
The qwen3 reasoning parser streams the thinking as ``reasoning_content`` deltas.
"""

from __future__ import annotations

from typing import Any

_ID = "chatcmpl-8c0f6c2b9a4e4f0d9a3b1f2e5d6c7b8a"
_MODEL = "Qwen/Qwen3-30B-A3B-Instruct-2507"


def _chunk(choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": _ID,
        "object": "chat.completion.chunk",
        "created": 1763891234,
        "model": _MODEL,
        "choices": choices,
        "usage": usage,
    }


def _delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    if finish:
        choice["stop_reason"] = None
    return _chunk([choice])


USAGE = {"prompt_tokens": 212, "total_tokens": 251, "completion_tokens": 39}

#: Thinking (qwen3 reasoning parser) then an answer, with the usage chunk.
REASONING_THEN_CONTENT = [
    _delta({"role": "assistant", "content": ""}),
    _delta({"reasoning_content": "The user asks about"}),
    _delta({"reasoning_content": " solar prices."}),
    _delta({"content": "Module prices"}),
    _delta({"content": " fell in 2024."}),
    _delta({"content": ""}, "stop"),
    _chunk([], USAGE),
]

#: Two hermes tool calls, arguments split mid-token, as the hermes parser streams them.
TWO_TOOL_CALLS = [
    _delta({"role": "assistant", "content": ""}),
    _delta(
        {
            "tool_calls": [
                {"index": 0, "id": "chatcmpl-tool-5b1d0e2c", "type": "function", "function": {"name": "search"}}
            ]
        }
    ),
    _delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"query": "'}}]}),
    _delta({"tool_calls": [{"index": 0, "function": {"arguments": "solar module"}}]}),
    _delta({"tool_calls": [{"index": 0, "function": {"arguments": ' prices 2024"}'}}]}),
    _delta(
        {
            "tool_calls": [
                {"index": 1, "id": "chatcmpl-tool-9e7a4f11", "type": "function", "function": {"name": "fetch"}}
            ]
        }
    ),
    _delta({"tool_calls": [{"index": 1, "function": {"arguments": '{"url": "https://example.org/a"}'}}]}),
    _delta({"content": ""}, "tool_calls"),
    _chunk([], USAGE),
]

#: A stream cut by the token limit.
LENGTH_CUT = [
    _delta({"role": "assistant", "content": ""}),
    _delta({"content": '{"title": "Sol'}),
    _delta({"content": ""}, "length"),
    _chunk([], USAGE),
]
