"""ReDoS: every regular expression in research/ and the report renderer stay linear on 500k-character input.

Each bound is a ratio to a plain input of the same size, never absolute seconds: a linear
pattern costs a small multiple of the plain run, a backtracking one (the old raw-tag pattern
took 64 s on 100k characters) costs thousands of times more.
"""

from __future__ import annotations

import ast
import functools
import itertools
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from research.render.html import markdown_to_html

ROOT = Path(__file__).resolve().parents[2] / "research"
N = 500_000
SCREEN_N = 4_000
RE_FUNCS = {"compile", "sub", "subn", "match", "search", "findall", "finditer", "split", "fullmatch"}
PLAIN = "The market grew 12% in 2024 [3], driven by demand (see Table 2); analysts expect more.\n"
# Linear patterns stay within a few times the plain run; a quadratic one at 500k is >1000x.
PATTERN_RATIO = 60.0
SCALE_LIMIT = 24.0
RENDER_RATIO = 80.0  # markdown-it spends more per punctuation character than per letter


def _regexes() -> list[tuple[str, re.Pattern[str]]]:
    """Every constant pattern passed to re.<func>(...) anywhere under research/ (migrations aside)."""
    found: list[tuple[str, re.Pattern[str]]] = []
    for path in sorted(ROOT.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in RE_FUNCS
                and node.args
            ):
                continue
            try:
                source = ast.literal_eval(node.args[0])
            except ValueError:
                continue  # built at run time from constants checked here, or not a text pattern
            if not isinstance(source, str):
                continue
            flags = 0
            flag_nodes = [k.value for k in node.keywords if k.arg == "flags"]
            if node.func.attr == "compile" and len(node.args) > 1:
                flag_nodes.append(node.args[1])
            for flag_node in flag_nodes:
                flags |= eval(compile(ast.Expression(flag_node), "<flags>", "eval"), {"re": re})
            found.append((f"{path.relative_to(ROOT.parent)}:{node.lineno}", re.compile(source, flags)))
    return found


REGEXES = _regexes()


def _alphabet(pattern: str) -> list[str]:
    """Characters a pattern cares about, plus letters, digits, spaces and newlines."""
    literal = {c for c in pattern if not c.isalnum() and c not in "\\^$?+*{}|"}
    return sorted(literal | {"a", "1", " ", "\n", "\t", ",", "，", "[", "]", "<", ">", "=", '"', "#", "-"})


def _candidates(pattern: str, size: int) -> list[str]:
    chars = _alphabet(pattern)
    units = chars + ["".join(pair) for pair in itertools.permutations(chars, 2)]
    units += ["<a ", "[1, ", "](", "![", "**a", "`a", "<think>", '{"a": ', "http://a", "1. ", "# a"]
    return [(unit * (size // len(unit) + 1))[:size] for unit in units]


def _cost(func: Callable[[str], object], text: str) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        func(text)
        best = min(best, time.perf_counter() - start)
    return best


@functools.cache
def _per_char_floor(size: int) -> float:
    """A plain pattern that looks at every character once: the floor of the plain-input cost.

    A pattern that never fires on plain prose (say, one for backticks) costs next to nothing
    there; comparing with that would call any work at all "slow".
    """
    return _cost(_scan(re.compile(r"[^\n]")), (PLAIN * (size // len(PLAIN) + 1))[:size])


def _scan(pattern: re.Pattern[str]) -> Callable[[str], object]:
    return lambda text: sum(1 for _ in pattern.finditer(text))


def test_the_regex_inventory_is_not_empty():
    assert len(REGEXES) > 80, [where for where, _ in REGEXES]
    assert any("render/html.py" in where for where, _ in REGEXES)


@pytest.mark.skipif(
    not os.environ.get("REDOS_FULL"),
    reason="set REDOS_FULL=1: takes long, and its small-size scaling screen is still noisy on a loaded machine",
)
@pytest.mark.parametrize(("where", "pattern"), REGEXES, ids=[w for w, _ in REGEXES])
def test_every_regex_is_linear_on_adversarial_input(where: str, pattern: re.Pattern[str]):
    scan = _scan(pattern)
    # Screen every candidate at a small size, then check that the worst ones grow linearly
    # (8x the input, at most SCALE_LIMIT x the time; a quadratic pattern takes 64x) before
    # running them at full size, where a quadratic pattern would run for hours.
    screened = sorted(((_cost(scan, text), text) for text in _candidates(pattern.pattern, SCREEN_N)), reverse=True)
    worst = [text for _, text in screened[:3]]
    for small in worst:
        unit = small[:8]
        floor = _per_char_floor(SCREEN_N)
        scale = _cost(scan, _grow(small, SCREEN_N * 8)) / max(_cost(scan, small), floor)
        assert scale < SCALE_LIMIT, f"{where}: {pattern.pattern!r} grows {scale:.0f}x for 8x more of {unit!r}"
    plain = max(_cost(scan, _grow(PLAIN, N)), _per_char_floor(N))
    for small in worst:
        ratio = _cost(scan, _grow(small, N)) / plain
        assert ratio < PATTERN_RATIO, f"{where}: {pattern.pattern!r} took {ratio:.0f}x plain on {small[:8]!r}…"


def _grow(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size]


RENDER_ATTACKS = {
    "unclosed tag with equals (the reported one)": lambda n: "<a " + "=" * (n - 4) + "<",
    "nested quotes": lambda n: ("<a x=\"<a x='" * (n // 12 + 1))[:n],
    "many attributes, never closed": lambda n: "<a" + " a" * (n // 2 - 1),
    "comment openers": lambda n: ("<!--" * (n // 4 + 1))[:n],
    "tag openers": lambda n: ("<a" * (n // 2 + 1))[:n],
    "open quotes": lambda n: ('<a "' * (n // 4 + 1))[:n],
    "link brackets": lambda n: ("[a](" * (n // 4 + 1))[:n],
    "emphasis": lambda n: ("*a_" * (n // 3 + 1))[:n],
    "citations": lambda n: ("[1, " * (n // 4 + 1))[:n],
}


@pytest.mark.parametrize("attack", list(RENDER_ATTACKS))
def test_report_rendering_is_linear_on_500k_adversarial_reports(attack: str):
    """The whole path a page view takes: markdown-it, the raw-tag scan, citations, figures, nh3."""
    render = lambda text: markdown_to_html(text, figure_url=lambda name: "/f/" + name)  # noqa: E731
    plain = _cost(render, (PLAIN * (N // len(PLAIN) + 1))[:N])
    ratio = _cost(render, RENDER_ATTACKS[attack](N)) / plain
    assert ratio < RENDER_RATIO, f"{attack}: {ratio:.0f}x the plain report"


HELPER_ATTACKS = {
    "emphasis openers": lambda n: ("_a " * (n // 3 + 1))[:n],
    "blank run before text": lambda n: "# a" + " " * (n - 4) + "b",
    "closing hashes": lambda n: "# a" + " #" * (n // 2 - 2) + "b",
    "blanks only": lambda n: " " * n,
    "citation openers": lambda n: ("[1 " * (n // 3 + 1))[:n],
    "figure openers, never closed (regexes only)": lambda n: ("![a" * (n // 3 + 1))[:n],
}
# markdown-it-py itself spends tens of microseconds per unclosed `![` (linear, but 250k of them take
# seconds), so report edits with more than 10,000 "[" are refused before anything renders them
# (tests/security/test_clear_refusals.py); this attack runs only against the regex-based helpers.
_MARKDOWN_IT_HELPERS = {"markdown_title", "markdown_sections", "strip_inline_markdown"}


def _helpers() -> dict[str, Callable[[str], object]]:
    from research.agents.citations import finalize_report, fix_figure_refs
    from research.render.html import markdown_sections, markdown_title, strip_inline_markdown

    return {
        "markdown_title": markdown_title,
        "markdown_sections": markdown_sections,
        "strip_inline_markdown": strip_inline_markdown,
        "finalize_report": lambda text: finalize_report(text, [], locale="en"),  # runs on every report edit
        "fix_figure_refs": lambda text: fix_figure_refs(text, []),
    }


@pytest.mark.parametrize("attack", list(HELPER_ATTACKS))
@pytest.mark.parametrize("helper", ["markdown_title", "markdown_sections", "strip_inline_markdown",
                                    "finalize_report", "fix_figure_refs"])
def test_report_text_helpers_are_linear_on_500k_adversarial_text(helper: str, attack: str):
    if helper in _MARKDOWN_IT_HELPERS and "regexes only" in attack:
        pytest.skip("markdown-it-py's cost per `![`: such edits are refused before rendering")
    func = _helpers()[helper]
    plain = max(_cost(func, _grow(PLAIN.replace("\n", " "), N)), _per_char_floor(N))
    ratio = _cost(func, HELPER_ATTACKS[attack](N)) / plain
    assert ratio < RENDER_RATIO, f"{helper} on {attack}: {ratio:.0f}x plain"
