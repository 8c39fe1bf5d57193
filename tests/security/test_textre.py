"""research/textre.py behaves like `re` for the patterns research/ writes, on RE2.

The stdlib engine is the reference here (tests are not linted): the same pattern, where both accept
it, must give the same matches, spans, groups, splits and substitutions, on ASCII and non-ASCII text.
"""

from __future__ import annotations

import random
import re
import time

import pytest

from research import textre
from tests.security.textre_calls import RESEARCH, literal_textre_calls

random.seed(11)
TEXTS = [
    "", "abc", "héllo wörld 12-34 中文 x", "a\nb\n# Title\n  ## x y ##\n", "aaa bbb\u3000ccc\xa0ddd",
    "A [trial](https://x.example/t) says more [9].", "# Title ##\n\n- [1] [SSB](https://b.example/s)\n",
    "中文 text，12.5% [3, 4] (see Table 2) http://a.b/c. ", "  \t x_y  \n\n", '<h2 id="sec-1">A</h2>',
    "**Bold**: quote `code` ```py\nx\n```", "é1,234.5 ok!? 。。", "<think>a</think><tool_call>{}</tool_call>",
] + ["".join(random.choice("ab é中1-#[]() \n_x.,。") for _ in range(random.randint(0, 24))) for _ in range(80)]


def _literal_patterns() -> list[tuple[str, int, str]]:
    return [(p, f, f"{path.relative_to(RESEARCH)}:{line}") for p, f, path, line in literal_textre_calls()]


# Known differences, documented in research/textre.py: RE2's \b is ASCII, and its $ without M is the very
# end (Python's also matches before a final newline); \p{..} is RE2-only syntax.
COMPARABLE = [(p, f, w) for p, f, w in _literal_patterns() if "\\b" not in p and "$" not in p and "\\p" not in p]


def test_there_are_patterns_to_compare():
    assert len(COMPARABLE) > 80


@pytest.mark.parametrize(("pattern", "flags", "where"), COMPARABLE, ids=[w for _, _, w in COMPARABLE])
def test_research_patterns_match_as_re_does(pattern: str, flags: int, where: str):
    ours, theirs = textre.compile(pattern, flags), re.compile(pattern, flags)
    for text in TEXTS:
        assert [m.span() for m in ours.finditer(text)] == [m.span() for m in theirs.finditer(text)], text
        assert ours.findall(text) == theirs.findall(text), text
        assert ours.split(text) == theirs.split(text), text
        assert ours.sub("<\\g<0>>", text) == theirs.sub("<\\g<0>>", text), text


@pytest.mark.parametrize("pattern", [r"\w+", r"\s+", r"(\d+)-(\d+)", r"x*", r"(?P<a>[a-z]+)(?:\s|$)", r"(a)|(b)",
                                     r"[\u4e00-\u9fff]+", r"^\s*#+\s*(.*)$"])
@pytest.mark.parametrize("flags", [0, re.M, re.I])
def test_positions_groups_and_templates(pattern: str, flags: int):
    ours, theirs = textre.compile(pattern, flags), re.compile(pattern, flags)
    for text in TEXTS:
        for pos in range(0, len(text) + 1, 3):
            a, b = ours.search(text, pos), theirs.search(text, pos)
            assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), (text, pos)
            a, b = ours.match(text, pos), theirs.match(text, pos)
            assert (a and a.groups()) == (b and b.groups()), (text, pos)
    assert textre.sub(r"(a)", "。\\1\\n", "xa") == re.sub(r"(a)", "。\\1\\n", "xa")  # non-ASCII templates


def test_a_forward_scan_with_positions_is_linear_on_non_ascii_text():
    """google-re2's own search(text, pos) encodes the whole text on each call: a loop over it was quadratic."""
    pattern = textre.compile(r"[.。]")

    def scan(text: str) -> int:
        count, pos = 0, 0
        while (m := pattern.search(text, pos)) is not None:
            count, pos = count + 1, m.end()
        return count

    small, large = "中文。" * 5_000, "中文。" * 50_000

    def cost(text: str) -> float:
        start = time.perf_counter()
        scan(text)
        return time.perf_counter() - start

    assert min(cost(large) for _ in range(2)) / min(cost(small) for _ in range(2)) < 30  # quadratic: 100
