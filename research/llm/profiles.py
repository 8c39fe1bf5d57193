"""Model profiles: how each supported model family speaks tools and thinking.

A profile is chosen with the ``LLM_PROFILE`` setting. It tells the client whether
tool calls come back through the OpenAI ``tools`` API (vLLM parses them with a
tool-call parser) or as ``<tool_call>{json}</tool_call>`` text the client parses
itself, and whether the model may leak ``<think>`` blocks into its content.
``vllm_serve`` is the command line to serve the profile's default model so the
client's expectations and the server's flags match (docs/models.md repeats it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ToolMode = Literal["native", "text_tags"]


@dataclass(frozen=True)
class Profile:
    name: str
    tool_mode: ToolMode
    think_tags: bool
    default_model: str
    vllm_serve: str
    extra_body: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    # Stop strings sent when the client drives tools through text tags: a ReAct model
    # must stop after its <tool_call> instead of inventing the tool's response.
    tool_stop: tuple[str, ...] = ()


PROFILES: dict[str, Profile] = {
    "qwen3": Profile(
        name="qwen3",
        tool_mode="native",
        think_tags=True,
        default_model="Qwen/Qwen3-30B-A3B-Instruct-2507",
        vllm_serve=(
            "vllm serve Qwen/Qwen3-30B-A3B-Instruct-2507 --port 8001"
            " --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3"
            " --max-model-len 32768 --enable-prefix-caching"
        ),
        notes=(
            "Hermes-style tool calls parsed by vLLM. The Instruct-2507 models do not think; "
            "Qwen3 thinking models put reasoning in `reasoning_content` via the qwen3 reasoning "
            "parser, and any <think> text that still leaks into content is stripped by the client."
        ),
    ),
    "tongyi-deepresearch": Profile(
        name="tongyi-deepresearch",
        tool_mode="text_tags",
        think_tags=True,
        default_model="Alibaba-NLP/Tongyi-DeepResearch-30B-A3B",
        vllm_serve=(
            "vllm serve Alibaba-NLP/Tongyi-DeepResearch-30B-A3B --port 8001"
            " --max-model-len 131072 --enable-prefix-caching"
        ),
        extra_body={"top_p": 0.95, "presence_penalty": 1.1},
        tool_stop=("\n<tool_response>", "<tool_response>"),
        notes=(
            "ReAct agent trained on Qwen3-30B-A3B: thinks in <think>, calls tools with "
            '<tool_call>{"name", "arguments"}</tool_call> text and reads results as '
            "<tool_response> user turns; final answers may be wrapped in <answer>. Served without "
            "a tool or reasoning parser: the client describes the tools in the system prompt, "
            "parses the tags and unwraps <answer>. 128K context."
        ),
    ),
    "agentcpm-explore": Profile(
        name="agentcpm-explore",
        tool_mode="native",
        think_tags=True,
        default_model="openbmb/AgentCPM-Explore",
        vllm_serve=(
            "vllm serve openbmb/AgentCPM-Explore --port 8001"
            " --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3"
            " --max-model-len 65536 --enable-prefix-caching"
        ),
        extra_body={"top_p": 0.95, "top_k": 20},
        notes=(
            "4B agent model built on Qwen3-4B-Thinking-2507: always thinks (the chat template "
            "opens <think>, so an unparsed reply starts with reasoning and a bare </think>) and "
            "emits Hermes <tool_call> blocks. If vLLM runs without the hermes parser the client "
            "still finds <tool_call> tags in the content."
        ),
    ),
    "generic": Profile(
        name="generic",
        tool_mode="native",
        think_tags=False,
        default_model="",
        vllm_serve=(
            "vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8001"
            " --enable-auto-tool-choice --tool-call-parser llama3_json --enable-prefix-caching"
        ),
        notes=(
            "Any OpenAI-compatible server (vLLM with the model's own tool parser, Ollama, "
            "llama.cpp server, hosted APIs). Native tool calls, no extra sampling parameters."
        ),
    ),
}


def get_profile(name: str) -> Profile:
    """The named profile; unknown or empty names fall back to ``generic``."""
    return PROFILES.get((name or "").strip().lower(), PROFILES["generic"])
