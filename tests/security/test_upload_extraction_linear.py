"""B2: a 6 KB Markdown upload held a worker for 130 s (issue #25): the title pattern was cubic.

The title is found by a line parser now, and every other pattern is RE2. Times are ratios to a plain
upload of the same size measured in this process.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from research.knowledge.extract import extract_document, markdown_title
from tests.support.costs import cost as _cost

PLAIN = "Heat pumps move heat instead of making it, so they use less energy than a boiler.\n"
ATTACKS: dict[str, Callable[[int], str]] = {
    "the reported upload: # a, blanks, b": lambda n: "# a" + " " * (n - 5) + "b\n",
    "closing hashes": lambda n: "# a" + " #" * ((n - 5) // 2) + "b\n",
    "many heading openers": lambda n: ("#" * 6 + " " * 3) * (n // 9),
    "blank lines": lambda n: "\n" * n,
    "tabs after the hashes": lambda n: "##" + "\t" * (n - 3) + "\n",
}




@pytest.mark.parametrize("size", [6_000, 500_000])
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_markdown_extraction_costs_no_more_than_a_plain_upload(attack: str, size: int):
    data = ATTACKS[attack](size).encode()
    plain = (PLAIN * (size // len(PLAIN) + 1))[:size].encode()
    cost = _cost(lambda: _extract_or_refuse(data))
    base = _cost(lambda: extract_document(filename="plain.md", data=plain))
    # A few milliseconds either way at 6,000 characters: compare against at least 5 ms of plain work.
    assert cost < 10 * max(base, 0.005), f"{attack} at {size:,}: {cost:.3f}s against {base:.3f}s plain"


def _extract_or_refuse(data: bytes) -> None:
    from research.knowledge.extract import DocumentRejected

    try:
        extract_document(filename="attack.md", data=data)
    except DocumentRejected:
        pass  # "no text": a refusal is an answer too, as long as it comes at once


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Title\n\nbody", "Title"),
        ("intro\n\n## Second level ##\n", "Second level"),
        ("   ### Indented three\n", "Indented three"),
        ("    # four spaces is code\n# Real\n", "Real"),
        ("####### seven hashes\n# Six or fewer\n", "Six or fewer"),
        ("#hashtag\n# Heading\n", "Heading"),
        ("# a" + " " * 6000 + "b\n", "a" + " " * 6000 + "b"),
        ("#\nno title on the next line\n", ""),
        ("# C#\n", "C#"),
        ("# ##\n# Next\n", "Next"),
    ],
)
def test_markdown_title(text: str, title: str):
    assert markdown_title(text) == title
