"""Structured output: a validated pydantic object from a chat model, on any server.

Asks in the best response format the server accepts (``json_schema``, then ``json_object`` with the
schema, then the prompt alone) and remembers, per server and model for the life of the process,
the level that works. The schema sent carries no size limits; pydantic checks them after a lenient
parse, and a reply that does not validate is asked for again with the error fed back.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from research.llm.messages import text_of
from research.llm.parsing import is_closed_json, names_response_format, one_line, parse_structured
from research.llm.types import ChatResult, LLMBadRequest, StructuredOutputError

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


class Chat(Protocol):
    """The one call structured output needs: ``LLMClient.chat``."""

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        agent: str = ...,
        response_format: dict[str, Any] | None = ...,
        temperature: float = ...,
        max_tokens: int | None = ...,
    ) -> ChatResult: ...


def structured_reply(
    chat: Chat,
    messages: list[dict[str, Any]],
    schema: type[M],
    *,
    base_url: str,
    model: str,
    agent: str = "",
    max_attempts: int = 3,
    temperature: float = 0.2,
    max_tokens: int | None = None,
) -> M:
    """A validated ``schema`` instance.

    Asks in the best response format the server accepts: ``json_schema`` (guided
    decoding), else ``json_object`` with the schema (llama.cpp's grammar), else the
    prompt alone. A server that refuses a format (any 4xx/5xx naming it) moves this
    server+model down a level for the life of the process. The schema sent carries no
    length or count limits (grammar compilers choke on them); pydantic checks those
    here. Small slips are repaired; otherwise it asks again with the error fed back.
    """
    full_schema = schema.model_json_schema()
    wire_schema = strip_limits(full_schema)
    key = (base_url, model)
    level = format_level(base_url, model)
    reason = "no attempt made"
    raw = ""
    attempt = 0
    retry_tail: list[dict[str, Any]] = []
    while attempt < max_attempts:
        # Below json_schema the model must see the schema: the hint sits in the base
        # conversation so a retry after a parse failure keeps it.
        base = _with_schema_hint(messages, full_schema) if level > 0 else list(messages)
        fmt = _response_format(level, schema.__name__, wire_schema)
        try:
            result = chat(
                [*base, *retry_tail],
                agent=agent,
                response_format=fmt,
                temperature=temperature,
                max_tokens=max_tokens,
            )
        except LLMBadRequest as e:
            if level < len(_FORMAT_LEVELS) - 1 and _rejects_response_format(e):
                level = _step_down(key, level, str(e))
                continue
            raise
        attempt += 1
        raw = result.content or ""
        cut_off = result.finish_reason == "length"
        try:
            if cut_off and attempt < max_attempts and not is_closed_json(raw):
                # A repaired half-object may validate yet miss what was cut: ask again.
                raise ValueError("the JSON object is not closed (the reply hit the length limit)")
            # Over-long fields are fed back while attempts remain, trimmed on the last one.
            return parse_structured(raw, schema, clip=attempt == max_attempts)
        except ValueError as e:
            reason = one_line(str(e))
            if cut_off:
                reason += " (the reply hit the length limit: answer more briefly)"
        log.info("structured %s attempt %d/%d failed: %s", schema.__name__, attempt, max_attempts, reason)
        retry_tail = [
            {"role": "assistant", "content": raw[:4000]},
            {
                "role": "user",
                "content": (
                    f"Your previous reply could not be used: {reason}\n"
                    f"Reply again with only one JSON object that matches the {schema.__name__} schema: "
                    "no prose, no code fences."
                ),
            },
        ]
    raise StructuredOutputError(
        one_line(f"the model gave no usable {schema.__name__} after {max_attempts} attempts: {reason}"),
        raw=raw,
        attempts=max_attempts,
    )


#: What ``structured()`` asks for, best first. The level that works is remembered per
#: (base URL, model) for the life of the process, so only the first call pays for probing.
_FORMAT_LEVELS = ("json_schema", "json_object", "prompt")
_format_levels: dict[tuple[str, str], int] = {}
_format_lock = threading.Lock()

#: JSON-schema keywords that bound sizes. Guided-decoding grammars expand them into
#: repetitions (llama.cpp gives up past a few thousand rules, and its server then dies;
#: vLLM's backends slow down); pydantic enforces them after parsing instead.
_LIMIT_KEYWORDS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "pattern"}
)


def format_level(base_url: str, model: str) -> int:
    """The remembered structured-output level for a server (0 = json_schema)."""
    with _format_lock:
        return _format_levels.get((base_url.rstrip("/"), model), 0)


def reset_format_levels() -> None:
    """Forget every remembered level (tests; a server that was upgraded)."""
    with _format_lock:
        _format_levels.clear()


def _step_down(key: tuple[str, str], level: int, why: str) -> int:
    with _format_lock:
        new = max(_format_levels.get(key, 0), level + 1)
        _format_levels[key] = new
    log.warning(
        "%s (%s) refused response_format %s (%s); using %s from now on",
        key[0], key[1], _FORMAT_LEVELS[level], one_line(why, 200), _FORMAT_LEVELS[new],
    )
    return new


def _response_format(level: int, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    if _FORMAT_LEVELS[level] == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if _FORMAT_LEVELS[level] == "json_object":
        # llama.cpp servers turn ``schema`` into a grammar; vLLM and others ignore it.
        return {"type": "json_object", "schema": schema}
    return None


def strip_limits(schema: Any) -> Any:
    """A copy of a JSON schema without length, count or pattern limits (at any depth).
    Names under ``properties`` and ``$defs`` are field names, never keywords: kept."""
    if isinstance(schema, list):
        return [strip_limits(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k in ("properties", "$defs", "definitions", "patternProperties") and isinstance(v, dict):
            out[k] = {name: strip_limits(sub) for name, sub in v.items()}
        elif k not in _LIMIT_KEYWORDS:
            out[k] = strip_limits(v)
    return out


def _with_schema_hint(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation with the schema appended to its last message (once)."""
    if not messages:
        return []
    hint = f"\n\nAnswer with one JSON object matching this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
    last = messages[-1]
    text = text_of(last.get("content"))
    return [*messages[:-1], {**last, "content": text if "JSON schema:" in text else text + hint}]


def _rejects_response_format(e: LLMBadRequest) -> bool:
    """A refusal (400/422 validation, or the 500 llama-cpp-python answers) that names the
    response format: asking in a simpler format may work."""
    return e.status >= 400 and names_response_format(str(e))
