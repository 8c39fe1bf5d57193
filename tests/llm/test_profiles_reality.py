"""Each profile against what its model family really emits, replayed by the fake server.

Samples are written from the formats in the models' own repositories (paraphrased text,
real structure):

- Qwen3 (hermes tool format): the chat template of Qwen/Qwen3 on Hugging Face and the
  "Tool Calling" page of vLLM's docs: ``<think>…</think>`` then
  ``<tool_call>\\n{"name": …, "arguments": {…}}\\n</tool_call>``; served without
  ``--reasoning-parser``/``--tool-call-parser`` all of it lands in ``content``.
- Tongyi-DeepResearch: Alibaba-NLP/DeepResearch, ``inference/prompt.py`` (tools in a
  ``<tools>`` block of the system prompt, one ``<tool_call>`` JSON per call, the final
  answer as ``<think>…</think>\\n<answer>…</answer>``) and ``inference/react_agent.py``
  (stop strings ``"\\n<tool_response>"``/``"<tool_response>"``, tool results sent back as
  a user turn wrapped in ``<tool_response>``, PythonInterpreter code in a ``<code>`` block
  inside the ``<tool_call>``).
- AgentCPM-Explore: OpenBMB/AgentCPM,
  ``AgentCPM-Explore/AgentRL/src/rollout/mcp/mcpapi/tool_parser/parse_qwen.py``: the
  reply is thinking closed by ``</think>`` (the template opened it), then hermes
  ``<tool_call>`` blocks; ``execute_code`` may carry its code in ``<code>`` tags.
"""

from __future__ import annotations

import json
from typing import Any

from research.llm.client import LLMClient
from tests.support.fake_llm import FakeLLM, Reply


def _tool(name: str, **props: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}},
        },
    }


SEARCH = _tool("search", query="string")
VISIT = _tool("visit", url="string", goal="string")
PYTHON = _tool("PythonInterpreter", code="string")
EXECUTE = _tool("execute_code", code="string")
QUESTION = [
    {"role": "system", "content": "You are a deep research assistant."},
    {"role": "user", "content": "How much did solar module prices fall in 2024?"},
]


def _client(fake: FakeLLM, profile: str) -> LLMClient:
    return LLMClient(base_url=fake.base_url, model=fake.model, profile=profile, timeout=5.0, max_retries=1)


def test_qwen3_think_and_hermes_calls_in_content_without_server_parsers() -> None:
    raw = (
        "<think>\nThe user wants 2024 price data. I should search first.\n</think>\n\n"
        '<tool_call>\n{"name": "search", "arguments": {"query": "solar module price 2024"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "visit", "arguments": {"url": "https://example.org/pv", "goal": "prices"}}\n</tool_call>'
    )
    for stream in (False, True):
        with FakeLLM(lambda body: Reply(content=raw)) as fake:
            deltas: list[str] = []
            result = _client(fake, "qwen3").chat(
                QUESTION, tools=[SEARCH, VISIT], on_delta=deltas.append if stream else None
            )
        assert [(c.name, c.arguments) for c in result.tool_calls] == [
            ("search", {"query": "solar module price 2024"}),
            ("visit", {"url": "https://example.org/pv", "goal": "prices"}),
        ]
        assert result.reasoning == "The user wants 2024 price data. I should search first."
        assert result.content == "" and "".join(deltas) == ""
        assert result.finish_reason == "tool_calls"


def test_qwen3_with_server_parsers_reasoning_content_and_native_calls() -> None:
    reply = Reply(reasoning="Search first.", tool_calls=[{"name": "search", "arguments": {"query": "pv 2024"}}])
    with FakeLLM(lambda body: reply) as fake:
        result = _client(fake, "qwen3").chat(QUESTION, tools=[SEARCH], on_delta=lambda _: None)
    assert result.reasoning == "Search first." and result.tool_calls[0].arguments == {"query": "pv 2024"}


def test_tongyi_react_turns_tool_call_tool_response_answer() -> None:
    turns = iter(
        [
            # Turn 1: think, then a search call (generation stops at "\n<tool_response>").
            "<think>\nI need recent figures; search.\n</think>\n"
            '<tool_call>\n{"name": "search", "arguments": {"query": ["solar module price 2024"]}}\n</tool_call>',
            # Turn 2: Python via a <code> block inside the call, arguments left empty.
            "<think>\nCompute the percentage drop.\n</think>\n"
            '<tool_call>\n{"name": "PythonInterpreter", "arguments": {}}\n<code>\nprint((0.2 - 0.11) / 0.2)\n</code>\n'
            "</tool_call>",
            # Turn 3: the final answer.
            "<think>\nPrices fell from about $0.20/W to $0.11/W.\n</think>\n"
            "<answer>Module prices fell by about 45% in 2024.</answer>",
        ]
    )
    with FakeLLM(lambda body: Reply(content=next(turns))) as fake:
        client = _client(fake, "tongyi-deepresearch")
        convo = list(QUESTION)
        tools = [SEARCH, PYTHON]
        first = client.chat(convo, tools=tools)
        assert [(c.name, c.arguments) for c in first.tool_calls] == [("search", {"query": ["solar module price 2024"]})]
        convo += [first.assistant_message(), {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "r1"}]
        second = client.chat(convo, tools=tools)
        assert second.tool_calls[0].name == "PythonInterpreter"
        assert second.tool_calls[0].arguments == {"code": "print((0.2 - 0.11) / 0.2)"}
        convo += [
            second.assistant_message(),
            {"role": "tool", "tool_call_id": second.tool_calls[0].id, "content": "0.45"},
        ]
        final = client.chat(convo, tools=tools)
        sent = fake.requests
    assert final.content == "Module prices fell by about 45% in 2024." and not final.tool_calls
    assert final.reasoning == "Prices fell from about $0.20/W to $0.11/W."
    # What Tongyi was trained on: tools in the system prompt, no OpenAI tools, its stop strings,
    # our calls echoed back as <tool_call> text and results as <tool_response> user turns.
    assert "tools" not in sent[0] and sent[0]["stop"] == ["\n<tool_response>", "<tool_response>"]
    assert "<tools>" in sent[0]["messages"][0]["content"]
    third = sent[2]["messages"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert third[2]["content"].startswith("<tool_call>") and '"search"' in third[2]["content"]
    assert third[3]["content"] == "<tool_response>\nr1\n</tool_response>"
    assert third[5]["content"] == "<tool_response>\n0.45\n</tool_response>"
    assert json.dumps(sent[0]).count("<think>") == 0  # we never send thinking back


def test_agentcpm_explore_bare_think_close_and_code_block() -> None:
    raw = (
        "The question needs a calculation. I will run code.\n</think>\n\n"
        '<tool_call>\n{"name": "execute_code", "arguments": {}}\n<code>\nprint(0.45 * 100)\n</code>\n</tool_call>'
    )
    for stream in (False, True):
        with FakeLLM(lambda body: Reply(content=raw)) as fake:
            deltas: list[str] = []
            result = _client(fake, "agentcpm-explore").chat(
                QUESTION, tools=[EXECUTE], on_delta=deltas.append if stream else None
            )
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("execute_code", {"code": "print(0.45 * 100)"})]
        assert result.reasoning == "The question needs a calculation. I will run code."
        assert result.content == "" and "".join(deltas) == ""


def test_agentcpm_explore_final_answer_after_bare_think() -> None:
    raw = "I have enough sources now.\n</think>\n\nModule prices fell by about 45% in 2024 [1]."
    with FakeLLM(lambda body: Reply(content=raw)) as fake:
        deltas: list[str] = []
        result = _client(fake, "agentcpm-explore").chat(QUESTION, tools=[SEARCH], on_delta=deltas.append)
    assert result.content == "Module prices fell by about 45% in 2024 [1]." == "".join(deltas)
    assert result.reasoning == "I have enough sources now."


def test_generic_profile_plain_openai_tools() -> None:
    reply = Reply(tool_calls=[{"name": "search", "arguments": {"query": "pv"}}])
    with FakeLLM(lambda body: reply) as fake:
        result = _client(fake, "generic").chat(QUESTION, tools=[SEARCH])
        assert fake.requests[0]["tools"] == [SEARCH]
    assert result.tool_calls[0].arguments == {"query": "pv"}
