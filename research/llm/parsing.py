"""Reading model output: ``<think>`` blocks, ``<tool_call>`` tags, ``<answer>`` wrappers, lenient
JSON and structured replies, and server error texts made one readable line. Pure functions."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

from research import textre
from research.llm.types import ToolCall

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

_THINK_BLOCK = textre.compile(r"<think>(.*?)</think>", textre.DOTALL)
_TOOL_CALL_BLOCK = textre.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", textre.DOTALL)
_CODE_BLOCK = textre.compile(r"<code>(.*?)</code>", textre.DOTALL)
_ANSWER_BLOCK = textre.compile(r"<answer>(.*?)(?:</answer>|\Z)", textre.DOTALL)
_FENCE = textre.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", textre.DOTALL)
_CONTEXT_ERROR = textre.compile(
    r"maximum context length|context[ _-]length|context window|max_model_len|prompt is too long"
    r"|too many (?:input )?tokens|exceeds? the (?:model'?s? )?(?:maximum|max|context)",
    textre.IGNORECASE,
)


def split_reasoning(text: str) -> tuple[str, str]:
    """Split model output into (content, reasoning).

    Handles ``<think>…</think>`` blocks anywhere, an unclosed ``<think>`` (the output was
    cut off while thinking: all of it is reasoning) and a *leaked* leading ``…</think>``
    without its opening tag, which is what thinking models emit when the chat template
    already opened the block in the prompt and no reasoning parser runs on the server.
    """
    if not text:
        return "", ""
    reasoning: list[str] = []
    end = text.find("</think>")
    if end != -1 and "<think>" not in text[:end]:
        reasoning.append(text[:end])
        text = text[end + len("</think>") :]

    def _take(m: textre.Match) -> str:
        reasoning.append(m.group(1))
        return ""

    text = _THINK_BLOCK.sub(_take, text)
    start = text.find("<think>")
    if start != -1:
        reasoning.append(text[start + len("<think>") :])
        text = text[:start]
    text = text.replace("</think>", "")
    return text.strip(), "\n".join(r.strip() for r in reasoning if r.strip())


def strip_fences(text: str) -> str:
    """The inside of the first Markdown code fence, or the text itself."""
    m = _FENCE.search(text)
    if m:
        return m.group(1)
    if text.lstrip().startswith("```"):  # an opening fence whose closing one never came
        return text.lstrip()[3:].split("\n", 1)[-1]
    return text


def extract_json_object(text: str) -> str:
    """The outermost ``{…}`` in ``text``, matched with awareness of JSON strings.

    Raises ValueError when there is no object or it never closes (truncated output).
    """
    start = text.find("{")
    if start == -1:
        raise ValueError("no JSON object found in the reply")
    depth = 0
    quote = ""
    escaped = False
    prev = ""  # last non-space character outside strings
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
                prev = ch
            continue
        if ch == '"' or (ch == "'" and prev in ("{", "[", ",", ":")):
            # Single quotes only open a string right after a structural char, so that an
            # apostrophe in a bare word cannot desynchronise the scan.
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        if not ch.isspace():
            prev = ch
    raise ValueError("the JSON object is not closed (the reply was probably cut off)")


def loads_lenient(text: str) -> Any:
    """Parse the JSON object inside a model reply: think blocks, fences and prose around
    it are ignored; slips (single quotes, trailing commas, comments, unquoted keys, bare
    words, raw newlines in strings, a cut-off tail) are repaired by the ``json-repair``
    package. Raises ValueError with a reason the model can act on."""
    content, _ = split_reasoning(text)
    body = strip_fences(content) if "```" in content else content
    try:
        candidate = extract_json_object(body)
    except ValueError:
        start = body.find("{")
        if start == -1:
            raise
        candidate = body[start:]  # never closed: let the repair close it
    try:
        return json.loads(candidate)
    except json.JSONDecodeError as first:
        try:
            value = json_repair.repair_json(candidate, return_objects=True, skip_json_loads=True)
        except Exception:  # the repair library must never take a job down
            value = None
        if isinstance(value, dict) and value:
            return value
        raise ValueError(f"invalid JSON: {first.msg} at line {first.lineno} column {first.colno}") from None


def clip_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word break in its second half where there is one,
    ending with "…" when cut."""
    if len(text) <= limit:
        return text
    if limit < 2:
        return text[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


_CLIPPABLE = frozenset({"string_too_long", "too_long"})


def _clip_to_limits(data: Any, errors: list[Any]) -> bool:
    """Shorten, in place, every string or list the schema caps and the reply overran; False (nothing
    changed that matters) unless those are the only errors. A step title that ran on until the length
    limit, or a sixth bullet where five are allowed, is a slip to trim, not a reason to fail the plan."""
    if not errors or any(err.get("type") not in _CLIPPABLE for err in errors):
        return False
    for err in errors:
        limit = (err.get("ctx") or {}).get("max_length")
        *path, last = err.get("loc") or ("",)
        try:
            parent = data
            for key in path:
                parent = parent[key]
            value = parent[last]
        except (KeyError, IndexError, TypeError):
            return False
        if not isinstance(limit, int):
            return False
        if isinstance(value, str):
            parent[last] = clip_text(value, limit)
        elif isinstance(value, list):
            parent[last] = value[:limit]
        else:
            return False
    return True


def parse_structured(text: str, schema: type[M], *, clip: bool = False) -> M:
    """Parse and validate a structured reply; ValueError carries a reason the model can act on.

    With `clip` (the last attempt), strings and lists longer than the schema allows are trimmed (a "…"
    marks a cut string) when that is all that is wrong; anything else is reported."""
    data = loads_lenient(text)
    try:
        return schema.model_validate(data)
    except ValidationError as first:
        e = first
        if clip and _clip_to_limits(data, list(first.errors())):
            try:
                model = schema.model_validate(data)
            except ValidationError as again:
                e = again
            else:
                log.info("structured %s: trimmed %d over-long field(s)", schema.__name__, first.error_count())
                return model
        lines = []
        for err in e.errors()[:12]:
            loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
            lines.append(f"{loc}: {err.get('msg', 'invalid')}")
        raise ValueError(f"the JSON does not match the {schema.__name__} schema: " + "; ".join(lines)) from None


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str, str]:
    """(arguments, raw_arguments, parse_error) from a tool call's arguments field."""
    if isinstance(raw, dict):
        return raw, json.dumps(raw, ensure_ascii=False), ""
    text = "" if raw is None else str(raw)
    if not text.strip():
        return {}, text, ""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            if not is_closed_json(text):  # cut-off arguments: tell the model, do not guess
                raise ValueError("the JSON object is not closed")
            value = loads_lenient(text)
        except ValueError as e:
            return {}, text, f"arguments are not valid JSON ({e})"
    if not isinstance(value, dict):
        return {}, text, "arguments must be a JSON object"
    return value, text, ""


def parse_tool_call_tags(text: str) -> tuple[str, list[ToolCall]]:
    """Find ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` blocks in ``text``.

    Returns the text without the blocks and the calls. A ``<code>…</code>`` inside a block
    (how Tongyi passes Python to its interpreter tool) becomes ``arguments["code"]``. A
    final block without its closing tag is still read: generation stops at stop strings.
    """
    calls: list[ToolCall] = []

    def _take(m: textre.Match) -> str:
        body = m.group(1)
        code = _CODE_BLOCK.search(body)
        if code:
            body = body[: code.start()] + body[code.end() :]
        try:
            obj = loads_lenient(body)
        except ValueError as e:
            calls.append(ToolCall(new_call_id(), "", {}, body.strip(), f"tool call is not valid JSON ({e})"))
            return ""
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            calls.append(
                ToolCall(new_call_id(), "", {}, body.strip(), 'tool call needs {"name": …, "arguments": {…}}')
            )
            return ""
        args, raw, err = parse_arguments(obj.get("arguments", obj.get("parameters", {})))
        if code and not err and not str(args.get("code") or "").strip():
            args["code"] = code.group(1).strip()
        calls.append(ToolCall(new_call_id(), obj["name"], args, raw, err))
        return ""

    rest = _TOOL_CALL_BLOCK.sub(_take, text) if "<tool_call>" in text else text
    return rest.strip(), calls


def unwrap_answer(text: str) -> str:
    """ReAct models wrap their final answer in ``<answer>``; return what is inside."""
    m = _ANSWER_BLOCK.search(text)
    return m.group(1).strip() if m else text


def is_context_error(message: str) -> bool:
    return bool(_CONTEXT_ERROR.search(message or ""))


_FORMAT_ERROR = textre.compile(
    r"response_format|response format|json_schema|json_object|guided|grammar|schema|structured output",
    textre.IGNORECASE,
)


def names_response_format(message: str) -> bool:
    """An error text that names the response format, the schema or the grammar (and is not a
    context-length error): asking in a simpler format may work where retrying cannot."""
    return bool(_FORMAT_ERROR.search(message or "")) and not is_context_error(message)


def is_closed_json(text: str) -> bool:
    content, _ = split_reasoning(text)
    try:
        extract_json_object(strip_fences(content) if "```" in content else content)
    except ValueError:
        return False
    return True


def one_line(text: str, limit: int = 400) -> str:
    """A readable one-line version of an error text: a server traceback keeps only its
    last line (the exception itself); whitespace is collapsed; long text is cut."""
    text = str(text or "")
    if "Traceback (most recent call last)" in text:
        head = text.split("Traceback (most recent call last)", 1)[0].strip().rstrip(":")
        tail = [ln.strip() for ln in text.splitlines() if ln.strip()]
        text = f"{head}: {tail[-1]}" if head else tail[-1]
    else:
        # llama-cpp-python appends the failing frame ('  File "…/app.py", line 376, …') to its message.
        text = textre.split(r"\n\s*File \"", text, maxsplit=1)[0]
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
