"""The model test double and the evaluation corpus in a process of their own, for bench.harness.Stack.

Speaks bench/model_server.py's protocol (one JSON line with the URLs, then settings on stdin), but
the site is the evaluation corpus. The "model" is tests/support/scenario.py: a scripted stand-in
that quotes the first sentences of the pages it fetched, not a language model. Its reporter here
also makes the mistakes the claim check exists for: a cited claim its source does not make, an
invented study with an invented citation and link, a true finding cited to a source that does
not exist, a bare URL to a page no tool returned, and a citation to nothing ([99]).
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


_FINDING = re.compile(r"^- (.+?) (\[\d+\])$", re.M)


@dataclass
class EvalScenario(Scenario):
    """The scripted reporter plus the mistakes the claim check exists for."""

    def _reporter(self, request: dict[str, Any]) -> Reply:
        reply = super()._reporter(request)
        known = _KNOWN.findall(section(self._task(request), "Sources"))
        first = known[0] if known else "1"
        # A true finding whose citation the "model" got wrong: its [n] names no source.
        findings = _FINDING.findall(reply.content)
        if len(findings) > 1:
            sentence, cite = findings[-1]
            reply.content = reply.content.replace(f"- {sentence} {cite}", f"- {sentence} [98]", 1)
        mistakes = (
            # A cited claim its source does not make, an invented study with an invented source and
            # link, and a pointer to a page no tool returned.
            f"\nA [field trial](https://trials.example.org/report) showed that every maker halved its "
            f"factory costs within a single year [{first}]. A 2031 field trial reported 1,200 km of range [97] "
            f"([trial](https://journals.example.org/2031-trial)). More at https://unknown.example.net/page.\n"
        )
        reply.content = reply.content.replace("\n## ", mistakes + "\n## ", 1)
        return reply


def main() -> int:
    return serve(EvalScenario(steps=4, step_types=("research",) * 4, bogus_citation=True), CorpusSite())


if __name__ == "__main__":
    sys.exit(main())
