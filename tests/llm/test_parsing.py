"""research/llm/parsing.py: properties of the reply parsers over generated replies."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from research.llm.parsing import extract_json_object, loads_lenient, parse_tool_call_tags, split_reasoning

# Text without tags or braces: what a model writes around its JSON, its reasoning and its answer.
PROSE = st.text(st.characters(blacklist_characters="<>{}", blacklist_categories=("Cs",)), max_size=60)
# Strings inside the JSON hold no tags: "…</think>…" anywhere in a reply is the leaked-reasoning form
# (everything before it is reasoning), so a JSON string holding it is ambiguous by design.
JSON_TEXT = st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=20)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_TEXT.map(lambda s: s[:8]), inner, max_size=4),
    max_leaves=12,
)
OBJECTS = st.dictionaries(JSON_TEXT.map(lambda s: s[:8]), JSON_VALUES, min_size=1, max_size=5)


@settings(max_examples=200, deadline=None)
@given(PROSE, OBJECTS, PROSE)
def test_the_json_object_is_found_inside_prose(before: str, obj: dict, after: str) -> None:
    text = f"{before}{json.dumps(obj, ensure_ascii=False)}{after}"
    assert json.loads(extract_json_object(text)) == obj
    assert loads_lenient(text) == obj


@settings(max_examples=200, deadline=None)
@given(PROSE, PROSE, st.booleans())
def test_reasoning_and_content_are_told_apart(reasoning: str, content: str, leaked: bool) -> None:
    # Either a whole <think> block, or the leaked form whose opening tag was in the prompt.
    text = f"{reasoning}</think>{content}" if leaked else f"<think>{reasoning}</think>{content}"
    assert split_reasoning(text) == (content.strip(), reasoning.strip())


@settings(max_examples=200, deadline=None)
@given(PROSE, st.lists(st.tuples(JSON_TEXT.filter(bool).map(lambda s: s[:12]), OBJECTS), max_size=3), PROSE)
def test_tool_call_tags_round_trip(before: str, calls: list[tuple[str, dict]], after: str) -> None:
    blocks = "".join(
        f"<tool_call>{json.dumps({'name': name, 'arguments': args}, ensure_ascii=False)}</tool_call>"
        for name, args in calls
    )
    rest, parsed = parse_tool_call_tags(f"{before}{blocks}{after}")
    assert rest == f"{before}{after}".strip()
    assert [(c.name, c.arguments, c.parse_error) for c in parsed] == [(n, a, "") for n, a in calls]
