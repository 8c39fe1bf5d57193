"""The client's value types and errors: what a call returns, what it records, what it raises."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str = ""  # non-empty: arguments unusable or tool unknown; tell the model

    def to_message_part(self) -> dict[str, Any]:
        """The entry for an assistant message's ``tool_calls`` list."""
        args = self.raw_arguments if self.parse_error and self.raw_arguments else json.dumps(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args}}


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class ChatResult:
    content: str
    tool_calls: list[ToolCall]
    reasoning: str
    usage: Usage
    finish_reason: str
    seconds: float
    model: str

    def assistant_message(self) -> dict[str, Any]:
        """The assistant turn to append to the conversation before the tool results."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [tc.to_message_part() for tc in self.tool_calls]
        return msg


@dataclass
class CallRecord:
    agent: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    ok: bool
    error: str = ""


class LLMError(Exception):
    """Base of every error the client raises."""


class LLMUnavailable(LLMError):
    """The server could not be reached or kept failing (connection, timeout, 429, 5xx)."""


class LLMBadRequest(LLMError):
    """The server refused the request (4xx other than 429): retrying would not help."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class StructuredOutputError(LLMError):
    """``structured()`` got no valid object after all attempts."""

    def __init__(self, message: str, *, raw: str = "", attempts: int = 0) -> None:
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts


@dataclass
class RawReply:
    """One answer as the server sent it, before tags are parsed and usage is settled."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments"}
    finish_reason: str = ""
    usage: dict[str, Any] | None = None
    model: str = ""
    sent_at: float = 0.0  # monotonic time the answering attempt was sent
    first_token_at: float = 0.0  # ... its first streamed token arrived (0: not streamed)
    done_at: float = 0.0  # ... its answer was complete


@dataclass(frozen=True)
class ServerSpeed:
    """What the client measured of its server: decode speed and time to first token,
    as moving averages over the calls so far (0.0 = not measured yet)."""

    tokens_per_s: float = 0.0
    ttft_s: float = 0.0
    samples: int = 0

    def seconds_for(self, tokens: int, *, default_tokens_per_s: float = 20.0) -> float:
        """Expected seconds for a reply of ``tokens`` tokens at the measured speed."""
        rate = self.tokens_per_s or default_tokens_per_s
        return self.ttft_s + tokens / max(rate, 0.01)
