"""ReDoS: every regular expression in research/ and the report renderer stay linear on long input.

Every pattern goes through research/textre.py (RE2, linear by construction; the lint in
test_regex_lint.py keeps it so). The sweep below still runs each registered pattern on adversarial
input at two sizes, because RE2's search is linear per call but a `finditer` that has to look far
ahead for each of many matches would not be. Each bound is a ratio measured in this process (the
small size, or a plain input of the same size), never absolute seconds: a linear pattern costs ~10x
for 10x the text, a quadratic one 100x.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from research import textre
from research.render.html import markdown_to_html
from tests.security.textre_calls import literal_textre_calls

pytestmark = pytest.mark.slow  # linear-time sweeps over 200k-500k inputs: make test runs them, test-fast does not

ROOT = Path(__file__).resolve().parents[2]
RESEARCH = ROOT / "research"
N = 500_000
SWEEP_SMALL, SWEEP_LARGE = 10_000, 100_000  # 10x the text: linear ~10x the time, quadratic ~100x
SCREEN_N = 2_000
PLAIN = "The market grew 12% in 2024 [3], driven by demand (see Table 2); analysts expect more.\n"
SCALE_LIMIT = 30.0  # for 10x the text
PATTERN_RATIO = 60.0  # at the large size, against one match per character of plain text
RENDER_RATIO = 80.0  # markdown-it spends more per punctuation character than per letter


def _patterns() -> list[tuple[str, textre.Pattern]]:
    """Every pattern research/ compiles: the registry after importing each module (module-level and
    dynamic patterns), plus each literal pattern passed to a textre function (function-level ones)."""
    where: dict[tuple[str, int], str] = {}
    for path in sorted(RESEARCH.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        source = path.read_text(encoding="utf-8")
        if "textre" not in source or path.name == "textre.py":
            continue
        importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    for pattern, flags, path, line in literal_textre_calls():
        textre.compile(pattern, flags)
        where.setdefault((pattern, flags), f"{path.relative_to(RESEARCH).as_posix()}:{line}")
    for key, entry in textre.REGISTRY.items():
        if key not in where:
            file, line = entry.where.rsplit(":", 1)
            at = Path(file)
            where[key] = f"{at.relative_to(RESEARCH).as_posix() if at.is_relative_to(RESEARCH) else at.name}:{line}"
    ordered = sorted(where.items(), key=lambda item: (item[1], item[0]))
    return [(f"{at} {source[:30]!r}", textre.compile(source, flags)) for (source, flags), at in ordered]


PATTERNS = _patterns()


def _literals(pattern: str) -> list[str]:
    return sorted({c for c in pattern if not c.isalnum() and c not in "\\^$?+*{}|()"} - {" "})


def _candidates(pattern: str, size: int) -> list[str]:
    """Repeated units made of the pattern's own characters, and long runs behind an opener."""
    literals = _literals(pattern)
    chars = sorted(set(literals) | {"a", "1", " ", "\n", "\t", ",", "[", "]", "<", ">", "#", "-", "."})
    units = chars + ["".join(pair) for pair in itertools.permutations(literals + ["a", " "], 2)]
    units += ["<a ", "[1, ", "[a](", "](", "![", "**a", "`a", "<think>", '{"a": ', "http://a", "<http://", "1. ",
              "# a", "中文", "a.b", "1,234"]
    texts = [_grow(unit, size) for unit in units]
    for opener, fill in itertools.product(literals + ["# a", "(", "["], [" ", "a", "1", "\t"]):
        texts.append(opener + fill * (size - len(opener) - 1) + "x")
    return texts


def _cost(func: Callable[[str], object], text: str, repeat: int = 2) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func(text)
        best = min(best, time.perf_counter() - start)
    return best


def _scan(pattern: textre.Pattern) -> Callable[[str], object]:
    return lambda text: sum(1 for _ in pattern.finditer(text))


@functools.cache
def _per_char_floor(size: int) -> float:
    """One match per character of plain text: the cost of the most matches a pattern can make.

    A pattern that never fires on a text costs next to nothing there; measured against that, any
    work at all would look "slow".
    """
    return _cost(_scan(textre.compile(r"[^\n]")), _grow(PLAIN, size))


def _grow(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size]


def test_the_pattern_inventory_is_not_empty():
    assert len(PATTERNS) > 100, [where for where, _ in PATTERNS]
    assert any(where.startswith("render/html.py") for where, _ in PATTERNS)
    assert any(where.startswith("report/claims.py") for where, _ in PATTERNS)


@pytest.mark.parametrize(("where", "pattern"), PATTERNS, ids=[w for w, _ in PATTERNS])
def test_every_regex_is_linear_on_adversarial_input(where: str, pattern: textre.Pattern):
    scan = _scan(pattern)
    # The worst inputs at a small size, then each of them at 10x and 100x that: the time may grow
    # about as much as the text (a quadratic pattern grows 100x per 10x).
    screened = sorted(((_cost(scan, text, 1), i) for i, text in enumerate(_candidates(pattern.pattern, SCREEN_N))),
                      reverse=True)
    small_texts = _candidates(pattern.pattern, SWEEP_SMALL)
    large_texts = _candidates(pattern.pattern, SWEEP_LARGE)
    for _cost_small, i in screened[:2]:
        small, large = small_texts[i], large_texts[i]
        base = max(_cost(scan, small), _per_char_floor(SWEEP_SMALL))
        large_cost = _cost(scan, large)
        assert large_cost / base < SCALE_LIMIT, (
            f"{where}: {pattern.pattern!r} grows {large_cost / base:.0f}x for 10x more of {small[:12]!r}")
        ratio = large_cost / _per_char_floor(SWEEP_LARGE)
        assert ratio < PATTERN_RATIO, f"{where}: {pattern.pattern!r} took {ratio:.0f}x plain on {small[:12]!r}"


def test_the_sweep_catches_a_pattern_that_looks_far_ahead_for_each_match():
    """RE2 is linear per search, but `a.*b|a` must look to the end for a `b` at every `a`: quadratic."""
    with pytest.raises(AssertionError, match="grows"):
        test_every_regex_is_linear_on_adversarial_input("sample", textre.compile(r"a.*b|a"))


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
    from research.render.html import markdown_sections, markdown_title, strip_inline_markdown
    from research.report.citations import finalize_report, fix_figure_refs

    return {
        "markdown_title": markdown_title,
        "markdown_sections": markdown_sections,
        "strip_inline_markdown": strip_inline_markdown,
        "finalize_report": lambda text: finalize_report(text, [], locale="en"),  # runs on every report edit
        "fix_figure_refs": lambda text: fix_figure_refs(text, []),
    }


HELPERS = ["markdown_title", "markdown_sections", "strip_inline_markdown", "finalize_report", "fix_figure_refs"]


@pytest.mark.parametrize(
    ("helper", "attack"),
    [(h, a) for h in HELPERS for a in HELPER_ATTACKS if not (h in _MARKDOWN_IT_HELPERS and "regexes only" in a)],
)
def test_report_text_helpers_are_linear_on_500k_adversarial_text(helper: str, attack: str):
    func = _helpers()[helper]
    plain = max(_cost(func, _grow(PLAIN.replace("\n", " "), N)), _per_char_floor(N))
    ratio = _cost(func, HELPER_ATTACKS[attack](N)) / plain
    assert ratio < RENDER_RATIO, f"{helper} on {attack}: {ratio:.0f}x plain"


TASK_ATTACKS = {
    # issue #25: "render/tts.py _LATIN_RUN (2.2 s against 16 ms)"
    "speech_segments: a Latin run in Chinese": ("tts", lambda n: "中文" + _grow("a1 ", n - 2)),
    "speech_segments: Latin words and marks": ("tts", lambda n: "中文" + _grow("a, ", n - 2)),
    # "agents/rank.py _TRAILING_FOOTNOTES (737 ms against 0.4 ms)"
    "split_sentences: footnotes that never end the text": ("rank", lambda n: _grow("[1]", n - 1) + "x"),
    "split_sentences: list markers": ("rank", lambda n: _grow("- ", n)),
}


@pytest.mark.parametrize("attack", list(TASK_ATTACKS))
def test_task_text_helpers_are_linear_on_200k_adversarial_text(attack: str):
    from research.agents.rank import split_sentences
    from research.render.tts import speech_segments

    kind, make = TASK_ATTACKS[attack]
    func: Callable[[str], object] = (lambda t: speech_segments(t, "zh-CN")) if kind == "tts" else split_sentences
    size = 200_000
    plain = max(_cost(func, _grow(PLAIN, size)), _per_char_floor(size))
    ratio = _cost(func, make(size)) / plain
    assert ratio < 10, f"{attack}: {ratio:.1f}x plain"


# --- Parsers and renders (issue 34): the same scaling check on HTML uploads, render budgets and podcasts --


def _parser_cases() -> list[tuple[str, str]]:
    from bench.bench_adversarial import PARSER_ATTACKS, _parser_paths

    return [(path, attack) for path in _parser_paths() for attack in PARSER_ATTACKS]


@pytest.mark.parametrize(("path", "attack"), _parser_cases())
def test_parsers_and_renders_are_linear_on_adversarial_input(path: str, attack: str):
    """10x the text costs about 10x the time (quadratic: ~100x), for the HTML extractor (lxml), the edit
    check with its render budgets, Markdown → HTML, the PDF's HTML with its capped contents, and the
    podcast script with its spoken-line cap."""
    from bench.bench_adversarial import PARSER_ATTACKS, _parser_paths

    func, _plain = _parser_paths()[path]
    make = PARSER_ATTACKS[attack]
    func(make(SWEEP_SMALL))  # warm
    small = max(_cost(func, make(SWEEP_SMALL)), _per_char_floor(SWEEP_SMALL))
    large = _cost(func, make(SWEEP_LARGE), repeat=1)
    assert large / small < SCALE_LIMIT, f"{path} on {attack}: {large / small:.1f}x for 10x the text"
