"""Fitting a conversation into the model's context window.

``ContextFit`` holds the window (given, discovered from the server once, or learned from a
context-length error) and the token arithmetic: conservative estimates, scaled up when the server
says they ran low, and a water-filling cut of the biggest contents before any turn is dropped.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from research import textre
from research.llm.messages import text_of
from research.llm.tokens import estimate_tokens, truncate_middle
from research.llm.window import DEFAULT_CONTEXT_WINDOW, window_in_error

log = logging.getLogger(__name__)

_MESSAGE_OVERHEAD = 4  # role markers and separators of a chat template, per message


class ContextFit:
    """The context window of one model and the token counts against it. Thread-safe."""

    def __init__(self, *, window: int | None, discover: Callable[[], tuple[int, str] | None], label: str) -> None:
        self._window = int(window) if window and window > 0 else 0
        self.source = "LLM_CONTEXT_WINDOW" if self._window else ""
        self._discover = discover
        self._label = label  # names the model in log lines
        self._calibration = 1.0  # grows when the server says our estimates were low
        self._lock = threading.Lock()

    def window(self) -> int:
        """The model's context window, from the first source that knows it: the explicit
        value (``LLM_CONTEXT_WINDOW``), the server (vLLM ``/v1/models`` max_model_len,
        llama.cpp ``/props`` n_ctx, Ollama ``/api/show``), else a safe default. The source
        is logged once and kept in ``source``."""
        if self._window:
            return self._window
        with self._lock:
            if self._window:
                return self._window
            found = self._discover()
            if found is None:
                return DEFAULT_CONTEXT_WINDOW  # server unreachable: ask again next time
            self._window, self.source = found
            log.info("context window of %s: %d tokens (%s)", self._label, *found)
            return self._window

    def learn_window(self, message: str) -> bool:
        """A context error that states the window (llama.cpp: "exceed context window of
        2048"; vLLM: "maximum context length is 4096") corrects a guessed window."""
        if self.source == "LLM_CONTEXT_WINDOW":
            return False
        value = window_in_error(message)
        if value is None:
            return False
        with self._lock:
            if value <= 0 or value == self._window:
                return False
            self._window, self.source = value, "the server's context-length error"
        log.warning("context window of %s is %d tokens (learned from an error)", self._label, value)
        return True

    def count_tokens(self, text: str) -> int:
        """Conservative estimate (see research.llm.tokens), scaled up if the server has
        told us that our estimates ran low."""
        n = estimate_tokens(text)
        return math.ceil(n * self._calibration) if self._calibration != 1.0 else n

    def message_tokens(self, msg: dict[str, Any]) -> int:
        n = _MESSAGE_OVERHEAD + self.count_tokens(text_of(msg.get("content")))
        if msg.get("tool_calls"):
            n += self.count_tokens(json.dumps(msg["tool_calls"], ensure_ascii=False))
        return n

    def messages_tokens(self, messages: list[dict[str, Any]]) -> int:
        return 3 + sum(self.message_tokens(m) for m in messages)

    def fit_messages(self, messages: list[dict[str, Any]], *, reserve: int) -> list[dict[str, Any]]:
        """A copy of ``messages`` whose estimated size + ``reserve`` fits the context window.

        Shrinks the biggest contents first, all to a common cap ("water-filling"), in this
        order: tool results and older user turns, then assistant turns, then the last user
        message, then the system prompt; each keeps its head and tail. Only if that is not
        enough are the oldest turns after the last user message dropped (an assistant turn
        together with its tool results). The system prompt is never dropped.
        """
        msgs = [dict(m) for m in messages]
        window = self.window()
        budget = window - max(0, reserve) - (16 + window // 100)
        if self.messages_tokens(msgs) <= budget:
            return msgs
        system_idx = 0 if msgs and msgs[0].get("role") == "system" else -1
        last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
        protected = {system_idx, last_user}
        phases: list[tuple[set[str], bool, int]] = [
            ({"tool", "user"}, False, 96),  # (roles, include protected, floor in tokens)
            ({"assistant"}, False, 96),
            ({"user"}, True, 256),
            ({"system"}, True, 512),
        ]
        if self._shrink(msgs, budget, phases, protected):
            return msgs
        msgs = self._drop_oldest(msgs, budget, system_idx, last_user)
        # Last resort for tiny windows: cut everything below the comfortable floors.
        self._shrink(msgs, budget, [({"tool", "user", "assistant", "system"}, True, 16)], set())
        return msgs

    def _shrink(
        self,
        msgs: list[dict[str, Any]],
        budget: int,
        phases: list[tuple[set[str], bool, int]],
        protected: set[int],
    ) -> bool:
        """Water-fill string contents phase by phase; True once the messages fit."""
        for roles, include_protected, floor in phases:
            for _ in range(4):  # truncation is estimated: repeat until it converges
                excess = self.messages_tokens(msgs) - budget
                if excess <= 0:
                    return True
                costs = {
                    i: self.count_tokens(m["content"])
                    for i, m in enumerate(msgs)
                    if m.get("role") in roles
                    and isinstance(m.get("content"), str)
                    and (include_protected or i not in protected)
                }
                costs = {i: c for i, c in costs.items() if c > floor}
                if not costs:
                    break
                cap = _water_level(list(costs.values()), excess, floor)
                for i, c in costs.items():
                    if c > cap:
                        msgs[i]["content"] = truncate_middle(msgs[i]["content"], cap, self.count_tokens)
        return self.messages_tokens(msgs) <= budget

    def _drop_oldest(
        self, msgs: list[dict[str, Any]], budget: int, system_idx: int, last_user: int
    ) -> list[dict[str, Any]]:
        # Everything is already cut to its floor; drop whole early turns. Prefer turns after
        # the last user message (tool rounds of an agent loop), then turns before it. An
        # assistant turn goes together with its tool results so none is left orphaned, and
        # the newest message (with the call that produced it) always stays.
        while self.messages_tokens(msgs) > budget:
            order = [i for i in range(len(msgs)) if i > last_user] + [i for i in range(len(msgs)) if i < last_user]
            span = None
            for start in order:
                if start == system_idx:
                    continue
                end = start + 1
                if msgs[start].get("role") == "tool" or msgs[start].get("tool_calls"):
                    while end < len(msgs) and msgs[end].get("role") == "tool":
                        end += 1
                if end < len(msgs):
                    span = (start, end)
                    break
            if span is None:
                break
            start, end = span
            del msgs[start:end]
            if last_user >= end:
                last_user -= end - start
        return msgs

    def calibrate(self, message: str, sent_prompt_estimate: int) -> None:
        """Learn from a context-length error how far off our estimate was."""
        real = None
        for pattern in (
            r"(\d+) in the messages",
            r"(\d+) input tokens",
            r"prompt \((\d+) tokens\)",
            r"has (\d+) tokens",
        ):
            m = textre.search(pattern, message)
            if m:
                real = int(m.group(1))
                break
        with self._lock:
            if real and sent_prompt_estimate and real > sent_prompt_estimate:
                factor = real / sent_prompt_estimate * 1.1
            else:
                factor = 1.35
            self._calibration = min(self._calibration * max(factor, 1.2), 4.0)
        log.warning("LLM said the prompt was too long; token estimates now scaled by %.2f", self._calibration)


def _water_level(costs: list[int], excess: int, floor: int) -> int:
    """The largest cap >= floor such that cutting every cost above it removes ``excess``
    (or ``floor`` if even that is not enough)."""
    lo, hi = floor, max(costs)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(c - mid for c in costs if c > mid) >= excess:
            lo = mid
        else:
            hi = mid - 1
    return lo
