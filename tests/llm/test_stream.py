"""research/llm/stream.py: what on_delta sees does not depend on how the server cut the stream."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from research.llm.stream import DeltaSink, VisibleFilter

# Pieces that make tags, broken tags and the text around them.
PIECES = st.sampled_from(
    ["<think>", "</think>", "<tool_call>", "</tool_call>", "<answer>", "</answer>", "<", "</", ">", "think",
     "tool_", "Solar", " grew", " ", "\n", "30%", "太阳能"]
)
TEXTS = st.lists(PIECES, max_size=30).map("".join)


def _cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def _filter(holdback: int) -> VisibleFilter:
    return VisibleFilter(hide=("think", "tool_call"), unwrap=("answer",), holdback=holdback)


def _visible(chunks: list[str], holdback: int) -> str:
    f = _filter(holdback)
    return "".join(f.feed(c) for c in chunks) + f.finish()


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.lists(st.integers(0, 10_000), max_size=12), st.sampled_from([0, 1024]))
def test_chunking_does_not_change_the_visible_text(text: str, cuts: list[int], holdback: int) -> None:
    # The texts stay under the 1024-character holdback, the window in which a leaked "…</think>"
    # is looked for; past it the filter streams on by design.
    assert _visible(_cut(text, cuts), holdback) == _visible([text], holdback)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), max_size=4),
       st.lists(st.integers(0, 10_000), max_size=12))
def test_retried_attempts_never_repeat_text(text: str, broken: list[tuple[int, int]], cuts: list[int]) -> None:
    # Attempts that broke off after a prefix of the same reply, then one that finished: the caller
    # sees the reply's visible text once, in order.
    emitted: list[str] = []
    sink = DeltaSink(emitted.append, lambda: _filter(0))
    for stop, seed in broken:
        sink.begin_attempt()
        for chunk in _cut(text[: stop % (len(text) + 1)], [seed, *cuts]):
            sink.content(chunk)
    sink.begin_attempt()
    for chunk in _cut(text, cuts):
        sink.content(chunk)
    sink.end()
    assert "".join(emitted) == _visible([text], 0)
