"""What one step may spend: tool rounds, tokens and seconds (from ctx.options, with defaults)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from research.agents.nodes.model import ChatResult, usage_tokens

DEFAULT_MAX_ROUNDS = 8
DEFAULT_STEP_TOKENS = 200_000
DEFAULT_STEP_SECONDS = 600.0


@dataclass
class StepBudget:
    max_rounds: int = DEFAULT_MAX_ROUNDS
    max_tokens: int = DEFAULT_STEP_TOKENS
    max_seconds: float = DEFAULT_STEP_SECONDS
    started: float = field(default_factory=time.monotonic)
    rounds: int = 0
    tokens: int = 0

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> StepBudget:
        def pick(key: str, default: float) -> float:
            value = options.get(key)
            return float(value) if isinstance(value, int | float) and value > 0 else default

        return cls(
            max_rounds=int(pick("max_rounds", DEFAULT_MAX_ROUNDS)),
            max_tokens=int(pick("step_token_budget", DEFAULT_STEP_TOKENS)),
            max_seconds=pick("step_time_budget_s", DEFAULT_STEP_SECONDS),
        )

    def spend(self, result: ChatResult) -> None:
        self.tokens += usage_tokens(result)

    def exhausted(self) -> str:
        """Why no further tool round may start ("" while there is budget left)."""
        if self.rounds >= self.max_rounds:
            return "rounds"
        if self.tokens >= self.max_tokens:
            return "tokens"
        if time.monotonic() - self.started >= self.max_seconds:
            return "time"
        return ""
