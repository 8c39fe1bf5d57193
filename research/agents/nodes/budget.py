"""What one step may spend: tool rounds, tokens and seconds (from ctx.options, with defaults)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from research.agents.nodes.model import ChatResult, usage_tokens

DEFAULT_MAX_ROUNDS = 8
DEFAULT_STEP_TOKENS = 200_000
DEFAULT_STEP_SECONDS = 600.0
#: Tokens one tool round (or the write-up) is expected to cost, to turn the server's measured
#: speed into seconds: a step near its time budget writes up instead of starting a round it
#: cannot finish (on a slow CPU server one round can take minutes).
ROUND_TOKENS = 400


def round_seconds(llm: Any) -> float:
    """Seconds one more tool round plus the write-up after it would take at the speed the
    client measured so far (0.0 until it has measured anything, or for clients without it)."""
    speed_of = getattr(llm, "speed", None)
    if not callable(speed_of):
        return 0.0
    speed = speed_of()
    if not getattr(speed, "samples", 0) or not getattr(speed, "tokens_per_s", 0.0):
        return 0.0
    return 2 * float(speed.seconds_for(ROUND_TOKENS))


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

    def exhausted(self, *, round_s: float = 0.0) -> str:
        """Why no further tool round may start ("" while there is budget left). ``round_s``:
        the expected seconds of a round and the write-up (see ``round_seconds``)."""
        if self.rounds >= self.max_rounds:
            return "rounds"
        if self.tokens >= self.max_tokens:
            return "tokens"
        if time.monotonic() - self.started + max(0.0, round_s) >= self.max_seconds:
            return "time"
        return ""
