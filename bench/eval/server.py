"""The model test double and the evaluation corpus in a process of their own, for bench.harness.Stack.

Speaks bench/model_server.py's protocol (one JSON line with the URLs, then settings on stdin), but
the site is the evaluation corpus. The "model" is tests/support/scenario.py: a scripted stand-in
that quotes the first sentences of the pages it fetched, not a language model. Its reporter here
also makes the mistakes the claim check exists for: a cited claim its source does not make, a
link and a bare URL to pages no tool returned, and a citation to a source that does not exist.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.eval.corpus import CorpusSite
from bench.model_server import serve
from tests.support.fake_llm import Reply
from tests.support.scenario import Scenario, section

_KNOWN = re.compile(r"^\[(\d+)\] ", re.M)


@dataclass
class EvalScenario(Scenario):
    def _reporter(self, request: dict[str, Any]) -> Reply:
        reply = super()._reporter(request)
        known = _KNOWN.findall(section(self._task(request), "Sources"))
        first = known[0] if known else "1"
        mistakes = (
            f"\nA [field trial](https://trials.example.org/report) showed that every maker halved its "
            f"factory costs within a single year [{first}]. More at https://unknown.example.net/page.\n"
        )
        reply.content = reply.content.replace("\n## ", mistakes + "\n## ", 1)
        return reply


def main() -> int:
    return serve(EvalScenario(steps=4, step_types=("research",) * 4, bogus_citation=True), CorpusSite())


if __name__ == "__main__":
    sys.exit(main())
