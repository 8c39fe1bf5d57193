"""The model boundary: what a node may ask of the model (ChatModel, declared beside the AgentContext in
research/agents/types.py), and token arithmetic over it.

research.llm.client.LLMClient implements ChatModel. Its replies carry no reasoning: the client strips
`<think>` blocks from content and from streamed deltas (the one think filter), so nodes do not.
"""

from __future__ import annotations

from collections.abc import Sequence

from research import textre
from research.agents.types import AgentContext, ChatModel
from research.llm.types import ChatResult, StructuredOutputError, ToolCall

__all__ = [
    "ANSWER_RESERVE", "ChatModel", "ChatResult", "EngineError", "StructuredOutputError", "ToolCall",
    "drop_text_tool_calls", "fit_texts", "require_model", "truncate_tokens", "usage_tokens",
]

ANSWER_RESERVE = 4_096  # tokens kept free for the model's answer when sizing inputs


class EngineError(RuntimeError):
    """A node could not produce its output. The message is shown to the user as the failure reason."""


def require_model(ctx: AgentContext) -> ChatModel:
    llm: ChatModel | None = ctx.llm
    if llm is None:
        raise EngineError("The llm engine needs a model client, but this job has none (is the model server set up?).")
    return llm


# A tool call written as text when no tools were offered (e.g. the final, tool-less call).
_TEXT_TOOL_CALL = textre.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", textre.DOTALL | textre.IGNORECASE)


def drop_text_tool_calls(text: str) -> str:
    return _TEXT_TOOL_CALL.sub("", text or "").strip()


def usage_tokens(result: ChatResult) -> int:
    return result.usage.prompt_tokens + result.usage.completion_tokens


def truncate_tokens(llm: ChatModel, text: str, cap: int) -> str:
    """Cut `text` to at most about `cap` tokens (on a line or word boundary where possible)."""
    total = llm.count_tokens(text)
    if total <= cap:
        return text
    cut = int(len(text) * cap / total * 0.95)
    piece = text[:cut]
    for _ in range(6):
        if llm.count_tokens(piece) <= cap:
            break
        cut = int(cut * 0.85)
        piece = text[:cut]
    boundary = max(piece.rfind("\n"), piece.rfind(" "))
    if boundary > len(piece) * 0.8:
        piece = piece[:boundary]
    return piece.rstrip() + "\n[… truncated]"


def fit_texts(llm: ChatModel, texts: Sequence[str], budget: int) -> list[str]:
    """Share `budget` tokens among `texts`: short ones stay whole, long ones are cut to an equal share."""
    sizes = [llm.count_tokens(t) for t in texts]
    if sum(sizes) <= budget:
        return list(texts)
    remaining = max(budget, 200 * len(texts))
    order = sorted(range(len(texts)), key=lambda i: sizes[i])
    caps = [0] * len(texts)
    for position, index in enumerate(order):
        share = remaining // (len(texts) - position)
        caps[index] = min(sizes[index], max(share, 150))
        remaining -= caps[index]
    return [truncate_tokens(llm, t, cap) for t, cap in zip(texts, caps, strict=True)]
