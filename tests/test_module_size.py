"""No module in research/ grows past 600 lines: a file that big is a package waiting to be split."""

from __future__ import annotations

from pathlib import Path

RESEARCH = Path(__file__).resolve().parents[1] / "research"
MAX_LINES = 600


def test_no_module_in_research_is_over_600_lines():
    big = {path.relative_to(RESEARCH).as_posix(): n for path in sorted(RESEARCH.rglob("*.py"))
           if "migrations" not in path.parts and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert big == {}
