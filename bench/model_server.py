"""The model test double and the local test site, in a process of their own (so they never share a GIL
with the benchmark's WebSocket clients).

    python bench/model_server.py
        → prints one JSON line: {"llm": "http://127.0.0.1:P/v1", "site": "http://127.0.0.1:Q"}
        ← reads JSON lines on stdin: {"ttft": 0.5, "tokens_per_s": 50, "think_words": 0, "batch_slowdown": 0.1}
        → answers each with {"ok": true, ...the settings now in force}
        EOF on stdin stops it.

The "model" plays tests/support/scenario.py (the engine's prompts → a cooperative model's answers);
BenchScenario adds one knob: `think_words` of reasoning on every researcher turn, the way a thinking
model (Qwen3) reasons before each tool call and before its step report. The latency model is the
fake's: time to first token, then `tokens_per_s` for every word of reasoning and content. With
`batch_slowdown` > 0 it is a batching model: n requests decoding at once each get
tokens_per_s / (1 + batch_slowdown × (n − 1)), as a GPU serving a batch slows every sequence a
little while the total throughput still grows (0 = every request decodes at full speed).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.scenario import Scenario
from tests.support.site import TestSite

_THOUGHT = (
    "The step asks for evidence; I should check which sources are relevant, what numbers they give, "
    "and whether they agree before I decide on the next action."
).split()


@dataclass
class BenchScenario(Scenario):
    think_words: int = 0  # reasoning words on every researcher turn

    def _researcher(self, request: dict[str, Any]) -> Reply:
        reply = super()._researcher(request)
        if self.think_words > 0:
            words = [_THOUGHT[i % len(_THOUGHT)] for i in range(self.think_words)]
            reply.reasoning = " ".join(words)
        return reply


class _Site(Protocol):
    url: str

    def start(self) -> Any: ...

    def stop(self) -> None: ...


def serve(scenario: Scenario, site: _Site) -> int:
    """Start the double playing `scenario` and `site`, print their URLs, then apply settings read from stdin
    until it closes (the protocol in the module doc)."""
    fake = FakeLLM(scenario, max_model_len=32768).start()
    site.start()
    for server in (fake._server, getattr(site, "_server", None)):  # clients that hang up are not errors here
        if server is not None:
            server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    print(json.dumps({"llm": fake.base_url, "site": site.url}), flush=True)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            cmd = json.loads(line)
            if "ttft" in cmd:
                fake.ttft = float(cmd["ttft"])
            if "tokens_per_s" in cmd:
                fake.tokens_per_s = float(cmd["tokens_per_s"])
            if "batch_slowdown" in cmd:
                fake.batch_slowdown = max(0.0, float(cmd["batch_slowdown"]))
            if "think_words" in cmd and isinstance(scenario, BenchScenario):
                scenario.think_words = int(cmd["think_words"])
            with scenario._lock:
                scenario.calls.clear()  # the logs are not needed; keep memory flat
            with fake._lock:
                fake.requests.clear()
            print(json.dumps({"ok": True, "ttft": fake.ttft, "tokens_per_s": fake.tokens_per_s,
                              "think_words": getattr(scenario, "think_words", 0),
                              "batch_slowdown": fake.batch_slowdown}),
                  flush=True)
    finally:
        fake.stop()
        site.stop()
    return 0


def main() -> int:
    return serve(BenchScenario(steps=12, step_types=("research",) * 12, bogus_citation=False), TestSite())


if __name__ == "__main__":
    sys.exit(main())
