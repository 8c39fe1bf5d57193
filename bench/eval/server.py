"""The model test double and the evaluation corpus in a process of their own, for bench.harness.Stack.

Speaks bench/model_server.py's protocol (one JSON line with the URLs, then settings on stdin), but
the site is the evaluation corpus. The "model" is tests/support/scenario.py: a scripted stand-in
that quotes the first sentences of the pages it fetched, not a language model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.eval.corpus import CorpusSite
from tests.support.fake_llm import FakeLLM
from tests.support.scenario import Scenario


def main() -> int:
    fake = FakeLLM(Scenario(steps=4, step_types=("research",) * 4, bogus_citation=True), max_model_len=32768)
    fake.start()
    site = CorpusSite().start()
    print(json.dumps({"llm": fake.base_url, "site": site.url}), flush=True)
    try:
        for line in sys.stdin:
            if line.strip():
                cmd = json.loads(line)
                fake.ttft = float(cmd.get("ttft", fake.ttft))
                fake.tokens_per_s = float(cmd.get("tokens_per_s", fake.tokens_per_s))
                print(json.dumps({"ok": True}), flush=True)
    finally:
        fake.stop()
        site.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
