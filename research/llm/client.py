"""OpenAI-compatible chat client for vLLM (and Ollama, llama.cpp server, hosted APIs).

One ``LLMClient`` per model endpoint. It owns everything between an agent and the
HTTP API: retries with backoff, hard timeouts, streaming, the two tool-calling
dialects (OpenAI ``tools`` and ``<tool_call>`` text tags), ``<think>`` stripping,
JSON-schema structured output with repair, and fitting prompts into the model's
context window. No Django imports here: Celery tasks and plain scripts use it.
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import json_repair
from pydantic import BaseModel, ValidationError

from research import textre
from research.llm.profiles import Profile, get_profile
from research.llm.tokens import estimate_tokens, truncate_middle
from research.tls import tls_context

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

#: Used when neither LLM_CONTEXT_WINDOW nor the server says: small enough for the usual
#: local-server defaults (llama-cpp-python 2048 is learned from its first error).
DEFAULT_CONTEXT_WINDOW = 8192
_MESSAGE_OVERHEAD = 4  # role markers and separators of a chat template, per message
_ERROR_BODY_LIMIT = 64 * 1024
_RESPONSE_LIMIT = 32 * 1024 * 1024


# --------------------------------------------------------------------------- results


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str = ""  # non-empty: arguments unusable or tool unknown; tell the model

    def to_message_part(self) -> dict[str, Any]:
        """The entry for an assistant message's ``tool_calls`` list."""
        args = self.raw_arguments if self.parse_error and self.raw_arguments else json.dumps(self.arguments)
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": args}}


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class ChatResult:
    content: str
    tool_calls: list[ToolCall]
    reasoning: str
    usage: Usage
    finish_reason: str
    seconds: float
    model: str

    def assistant_message(self) -> dict[str, Any]:
        """The assistant turn to append to the conversation before the tool results."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [tc.to_message_part() for tc in self.tool_calls]
        return msg


@dataclass
class CallRecord:
    agent: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    ok: bool
    error: str = ""


class LLMError(Exception):
    """Base of every error the client raises."""


class LLMUnavailable(LLMError):
    """The server could not be reached or kept failing (connection, timeout, 429, 5xx)."""


class LLMBadRequest(LLMError):
    """The server refused the request (4xx other than 429): retrying would not help."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class StructuredOutputError(LLMError):
    """``structured()`` got no valid object after all attempts."""

    def __init__(self, message: str, *, raw: str = "", attempts: int = 0) -> None:
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# --------------------------------------------------------------------------- text parsing

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


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str, str]:
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
            if not _is_closed_json(text):  # cut-off arguments: tell the model, do not guess
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
            calls.append(ToolCall(_new_call_id(), "", {}, body.strip(), f"tool call is not valid JSON ({e})"))
            return ""
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            calls.append(
                ToolCall(_new_call_id(), "", {}, body.strip(), 'tool call needs {"name": …, "arguments": {…}}')
            )
            return ""
        args, raw, err = _parse_arguments(obj.get("arguments", obj.get("parameters", {})))
        if code and not err and not str(args.get("code") or "").strip():
            args["code"] = code.group(1).strip()
        calls.append(ToolCall(_new_call_id(), obj["name"], args, raw, err))
        return ""

    rest = _TOOL_CALL_BLOCK.sub(_take, text) if "<tool_call>" in text else text
    return rest.strip(), calls


def unwrap_answer(text: str) -> str:
    """ReAct models wrap their final answer in ``<answer>``; return what is inside."""
    m = _ANSWER_BLOCK.search(text)
    return m.group(1).strip() if m else text


def is_context_error(message: str) -> bool:
    return bool(_CONTEXT_ERROR.search(message or ""))


# --------------------------------------------------------------------------- streaming filter


class _VisibleFilter:
    """Incrementally removes hidden sections (think, text tool calls) from streamed text.

    Tags may arrive split across chunks, so a possible partial tag at the end of the
    buffer is held back. With ``holdback`` > 0 the start of the stream is held until
    it is clear whether a leaked ``…</think>`` (thinking without an opening tag) is in
    progress: either ``</think>`` shows up, ``<think>`` opens, the server reports
    reasoning separately, or ``holdback`` characters pass without any of these.
    """

    def __init__(self, *, hide: tuple[str, ...], unwrap: tuple[str, ...], holdback: int) -> None:
        self._hide = hide
        self._markers = [f"<{t}>" for t in (*hide, *unwrap)] + [f"</{t}>" for t in (*hide, *unwrap)]
        self._buf = ""
        self._inside = ""
        self._released = holdback <= 0
        self._holdback = holdback
        self._started = False

    def release(self) -> None:
        self._released = True

    def feed(self, text: str) -> str:
        self._buf += text
        if not self._released:
            end = self._buf.find("</think>")
            if self._buf.lstrip().startswith("<think>"):
                self._released = True
            elif end != -1 and "<think>" not in self._buf[:end]:
                self._buf = self._buf[end + len("</think>") :]
                self._released = True
            elif len(self._buf) >= self._holdback:
                self._released = True
            else:
                return ""
        return self._drain(final=False)

    def finish(self) -> str:
        self._released = True
        return self._drain(final=True)

    @staticmethod
    def _partial_suffix(buf: str, markers: list[str]) -> int:
        best = 0
        for m in markers:
            for k in range(min(len(m) - 1, len(buf)), best, -1):
                if buf.endswith(m[:k]):
                    best = k
                    break
        return best

    def _drain(self, *, final: bool) -> str:
        out: list[str] = []
        while self._buf:
            if self._inside:
                close = f"</{self._inside}>"
                i = self._buf.find(close)
                if i == -1:
                    keep = 0 if final else self._partial_suffix(self._buf, [close])
                    self._buf = self._buf[len(self._buf) - keep :] if keep else ""
                    break
                self._buf = self._buf[i + len(close) :]
                self._inside = ""
                continue
            hits = [(self._buf.find(m), m) for m in self._markers]
            hits = [(i, m) for i, m in hits if i != -1]
            if not hits:
                keep = 0 if final else self._partial_suffix(self._buf, self._markers)
                out.append(self._buf[: len(self._buf) - keep])
                self._buf = self._buf[len(self._buf) - keep :]
                break
            i, marker = min(hits)
            out.append(self._buf[:i])
            self._buf = self._buf[i + len(marker) :]
            name = marker.strip("</>")
            if not marker.startswith("</") and name in self._hide:
                self._inside = name
        text = "".join(out)
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text


class _DeltaSink:
    """Feeds visible text to the caller's ``on_delta`` across retried attempts.

    A retried stream starts over; the characters the caller already received are
    skipped so the caller sees one continuous text (the final ChatResult is always
    the complete, correct one even if a retry produced slightly different words).
    """

    def __init__(self, on_delta: Callable[[str], None], make_filter: Callable[[], _VisibleFilter]) -> None:
        self._on_delta = on_delta
        self._make_filter = make_filter
        self._filter = make_filter()
        self._emitted = 0
        self._seen = 0
        self._skip = 0

    def begin_attempt(self) -> None:
        self._filter = self._make_filter()
        self._skip = self._emitted
        self._seen = 0

    def content(self, text: str) -> None:
        self._emit(self._filter.feed(text))

    def reasoning_seen(self) -> None:
        self._filter.release()

    def end(self) -> None:
        self._emit(self._filter.finish())

    def _emit(self, visible: str) -> None:
        if not visible:
            return
        start = self._seen
        self._seen += len(visible)
        if self._seen <= self._skip:
            return
        if start < self._skip:
            visible = visible[self._skip - start :]
        self._emitted = self._seen
        self._on_delta(visible)


@dataclass
class _Raw:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments"}
    finish_reason: str = ""
    usage: dict[str, Any] | None = None
    model: str = ""
    sent_at: float = 0.0  # monotonic time the answering attempt was sent
    first_token_at: float = 0.0  # ... its first streamed token arrived (0: not streamed)
    done_at: float = 0.0  # ... its answer was complete


@dataclass(frozen=True)
class ServerSpeed:
    """What the client measured of its server: decode speed and time to first token,
    as moving averages over the calls so far (0.0 = not measured yet)."""

    tokens_per_s: float = 0.0
    ttft_s: float = 0.0
    samples: int = 0

    def seconds_for(self, tokens: int, *, default_tokens_per_s: float = 20.0) -> float:
        """Expected seconds for a reply of ``tokens`` tokens at the measured speed."""
        rate = self.tokens_per_s or default_tokens_per_s
        return self.ttft_s + tokens / max(rate, 0.01)


_TOKEN_KEYS = ("content", "reasoning_content", "reasoning", "tool_calls")
_SPEED_WEIGHT = 0.3  # weight of the newest call in the moving averages

# --------------------------------------------------------------------------- the client


class LLMClient:
    """Chat client for one model on one OpenAI-compatible server. Thread-safe."""

    #: how many times a 400 "context length" answer makes the client shrink and retry
    context_retries: int = 2
    #: characters of a think_tags model's stream held back to catch a leaked ``…</think>``
    think_holdback: int = 1024

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        profile: str | Profile = "qwen3",
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        context_window: int | None = None,
        on_call: Callable[[CallRecord], None] | None = None,
        stream_deadline: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.profile = profile if isinstance(profile, Profile) else get_profile(profile)
        self.model = model or self.profile.default_model
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.on_call = on_call
        # A non-streamed answer must arrive within ``timeout``; a stream must keep sending
        # (read timeout) and finish within ``stream_deadline``, so long reports can stream
        # for minutes while a server that trickles forever still cannot hang a worker.
        self.stream_deadline = float(stream_deadline) if stream_deadline else max(self.timeout * 5, 600.0)
        self._window = int(context_window) if context_window and context_window > 0 else 0
        self.context_window_source = "LLM_CONTEXT_WINDOW" if self._window else ""
        # Qwen3 "Instruct-2507" models never think, so their streams need no holdback.
        if textre.search(r"instruct-2507", self.model, textre.IGNORECASE):
            self.think_holdback = 0
        self._calibration = 1.0  # grows when the server says our estimates were low
        self._speed = ServerSpeed()
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            verify=tls_context(),
            # Proxy variables from the environment are for the outside world; a local model
            # server must be reached directly (hosted APIs behind a proxy still honour them).
            trust_env=not is_local_url(self.base_url),
        )

    # ---------------------------------------------------------------- lifecycle

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- tokens and context

    def context_window(self) -> int:
        """The model's context window, from the first source that knows it: the explicit
        value (``LLM_CONTEXT_WINDOW``), the server (vLLM ``/v1/models`` max_model_len,
        llama.cpp ``/props`` n_ctx, Ollama ``/api/show``), else a safe default. The source
        is logged once and kept in ``context_window_source``."""
        if self._window:
            return self._window
        with self._lock:
            if self._window:
                return self._window
            found = self._fetch_window()
            if found is None:
                return DEFAULT_CONTEXT_WINDOW  # server unreachable: ask again next time
            self._window, self.context_window_source = found
            log.info("context window of %s: %d tokens (%s)", self.model or self.base_url, *found)
            return self._window

    def _fetch_window(self) -> tuple[int, str] | None:
        try:
            resp = self._http.get(f"{self.base_url}/models", timeout=min(self.timeout, 10.0))
        except httpx.HTTPError as e:
            log.info("context window: GET /models failed (%s); assuming %d for now", e, DEFAULT_CONTEXT_WINDOW)
            return None
        window = _window_from_models(resp, self.model) if resp.status_code == 200 else None
        if window:
            return window, "server /v1/models max_model_len"
        for probe in (self._window_from_props, self._window_from_ollama):
            try:
                found = probe()
            except (httpx.HTTPError, ValueError, TypeError, AttributeError):
                found = None
            if found:
                return found
        return DEFAULT_CONTEXT_WINDOW, "safe default (the server does not say; set LLM_CONTEXT_WINDOW)"

    def _server_root(self) -> str:
        return textre.sub(r"/v1$", "", self.base_url)

    def _window_from_props(self) -> tuple[int, str] | None:
        """llama.cpp's own server: ``GET /props`` → default_generation_settings.n_ctx."""
        resp = self._http.get(f"{self._server_root()}/props", timeout=min(self.timeout, 10.0))
        if resp.status_code != 200:
            return None
        data = resp.json()
        settings = data.get("default_generation_settings") or {}
        for value in (settings.get("n_ctx"), data.get("n_ctx")):
            if isinstance(value, int) and value > 0:
                return value, "server /props n_ctx"
        return None

    def _window_from_ollama(self) -> tuple[int, str] | None:
        """Ollama: ``POST /api/show`` → the num_ctx parameter it runs with, else the
        model's trained ``*.context_length``."""
        resp = self._http.post(
            f"{self._server_root()}/api/show", json={"model": self.model}, timeout=min(self.timeout, 10.0)
        )
        if resp.status_code != 200:
            return None
        data = resp.json()
        m = textre.search(r"^\s*num_ctx\s+(\d+)", str(data.get("parameters") or ""), textre.MULTILINE)
        if m and int(m.group(1)) > 0:
            return int(m.group(1)), "server /api/show num_ctx"
        for key, value in (data.get("model_info") or {}).items():
            if str(key).endswith(".context_length") and isinstance(value, int) and value > 0:
                return value, "server /api/show context_length"
        return None

    def _learn_window(self, message: str) -> bool:
        """A context error that states the window (llama.cpp: "exceed context window of
        2048"; vLLM: "maximum context length is 4096") corrects a guessed window."""
        if self.context_window_source == "LLM_CONTEXT_WINDOW":
            return False
        m = textre.search(r"context window of (\d+)|maximum context length is (\d+)", message)
        if not m:
            return False
        value = int(m.group(1) or m.group(2))
        with self._lock:
            if value <= 0 or value == self._window:
                return False
            self._window, self.context_window_source = value, "the server's context-length error"
        log.warning("context window of %s is %d tokens (learned from an error)", self.model, value)
        return True

    def count_tokens(self, text: str) -> int:
        """Conservative estimate (see research.llm.tokens), scaled up if the server has
        told us that our estimates ran low."""
        n = estimate_tokens(text)
        return math.ceil(n * self._calibration) if self._calibration != 1.0 else n

    def _message_tokens(self, msg: dict[str, Any]) -> int:
        n = _MESSAGE_OVERHEAD + self.count_tokens(_text_of(msg.get("content")))
        if msg.get("tool_calls"):
            n += self.count_tokens(json.dumps(msg["tool_calls"], ensure_ascii=False))
        return n

    def _messages_tokens(self, messages: list[dict[str, Any]]) -> int:
        return 3 + sum(self._message_tokens(m) for m in messages)

    def fit_messages(self, messages: list[dict[str, Any]], *, reserve: int) -> list[dict[str, Any]]:
        """A copy of ``messages`` whose estimated size + ``reserve`` fits the context window.

        Shrinks the biggest contents first, all to a common cap ("water-filling"), in this
        order: tool results and older user turns, then assistant turns, then the last user
        message, then the system prompt; each keeps its head and tail. Only if that is not
        enough are the oldest turns after the last user message dropped (an assistant turn
        together with its tool results). The system prompt is never dropped.
        """
        msgs = [dict(m) for m in messages]
        window = self.context_window()
        budget = window - max(0, reserve) - (16 + window // 100)
        if self._messages_tokens(msgs) <= budget:
            return msgs
        system_idx = 0 if msgs and msgs[0].get("role") == "system" else -1
        last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
        protected = {system_idx, last_user}
        phases: list[tuple[set[str], bool, int]] = [
            ({"tool", "user"}, False, 96),  # (roles, include protected, floor in tokens)
            ({"assistant"}, False, 96),
            ({"user"}, True, 256),
            ({"system"}, True, 512),
        ]
        if self._shrink(msgs, budget, phases, protected):
            return msgs
        msgs = self._drop_oldest(msgs, budget, system_idx, last_user)
        # Last resort for tiny windows: cut everything below the comfortable floors.
        self._shrink(msgs, budget, [({"tool", "user", "assistant", "system"}, True, 16)], set())
        return msgs

    def _shrink(
        self,
        msgs: list[dict[str, Any]],
        budget: int,
        phases: list[tuple[set[str], bool, int]],
        protected: set[int],
    ) -> bool:
        """Water-fill string contents phase by phase; True once the messages fit."""
        for roles, include_protected, floor in phases:
            for _ in range(4):  # truncation is estimated: repeat until it converges
                excess = self._messages_tokens(msgs) - budget
                if excess <= 0:
                    return True
                costs = {
                    i: self.count_tokens(m["content"])
                    for i, m in enumerate(msgs)
                    if m.get("role") in roles
                    and isinstance(m.get("content"), str)
                    and (include_protected or i not in protected)
                }
                costs = {i: c for i, c in costs.items() if c > floor}
                if not costs:
                    break
                cap = _water_level(list(costs.values()), excess, floor)
                for i, c in costs.items():
                    if c > cap:
                        msgs[i]["content"] = truncate_middle(msgs[i]["content"], cap, self.count_tokens)
        return self._messages_tokens(msgs) <= budget

    def _drop_oldest(
        self, msgs: list[dict[str, Any]], budget: int, system_idx: int, last_user: int
    ) -> list[dict[str, Any]]:
        # Everything is already cut to its floor; drop whole early turns. Prefer turns after
        # the last user message (tool rounds of an agent loop), then turns before it. An
        # assistant turn goes together with its tool results so none is left orphaned, and
        # the newest message (with the call that produced it) always stays.
        while self._messages_tokens(msgs) > budget:
            order = [i for i in range(len(msgs)) if i > last_user] + [i for i in range(len(msgs)) if i < last_user]
            span = None
            for start in order:
                if start == system_idx:
                    continue
                end = start + 1
                if msgs[start].get("role") == "tool" or msgs[start].get("tool_calls"):
                    while end < len(msgs) and msgs[end].get("role") == "tool":
                        end += 1
                if end < len(msgs):
                    span = (start, end)
                    break
            if span is None:
                break
            start, end = span
            del msgs[start:end]
            if last_user >= end:
                last_user -= end - start
        return msgs

    def _calibrate(self, message: str, sent_prompt_estimate: int) -> None:
        """Learn from a context-length error how far off our estimate was."""
        real = None
        for pattern in (
            r"(\d+) in the messages",
            r"(\d+) input tokens",
            r"prompt \((\d+) tokens\)",
            r"has (\d+) tokens",
        ):
            m = textre.search(pattern, message)
            if m:
                real = int(m.group(1))
                break
        with self._lock:
            if real and sent_prompt_estimate and real > sent_prompt_estimate:
                factor = real / sent_prompt_estimate * 1.1
            else:
                factor = 1.35
            self._calibration = min(self._calibration * max(factor, 1.2), 4.0)
        log.warning("LLM said the prompt was too long; token estimates now scaled by %.2f", self._calibration)

    # ---------------------------------------------------------------- chat

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        agent: str = "",
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
        seed: int | None = None,
    ) -> ChatResult:
        """One chat completion, retried on transient failures; see the module docstring.
        ``seed`` is sent as the sampling seed (vLLM, llama.cpp and OpenAI honour it), so the
        parallel runs of a heavy step sample apart yet reproducibly."""
        started = time.monotonic()
        result: ChatResult | None = None
        error = ""
        try:
            result = self._chat(messages, tools, response_format, temperature, max_tokens, on_delta, started, seed)
            return result
        except BaseException as e:
            error = f"{type(e).__name__}: {e}"
            raise
        finally:
            self._report(
                CallRecord(
                    agent=agent,
                    model=result.model if result else self.model,
                    prompt_tokens=result.usage.prompt_tokens if result else 0,
                    completion_tokens=result.usage.completion_tokens if result else 0,
                    seconds=round(time.monotonic() - started, 4),
                    ok=result is not None,
                    error=error,
                )
            )

    def speed(self) -> ServerSpeed:
        """The server's measured speed so far (callers scale time budgets with it)."""
        with self._lock:
            return self._speed

    def _measure(self, raw: _Raw, completion_tokens: int) -> None:
        if not raw.sent_at or raw.done_at <= raw.sent_at:
            return
        ttft = raw.first_token_at - raw.sent_at if raw.first_token_at else 0.0
        decode = raw.done_at - (raw.first_token_at or raw.sent_at)
        rate = completion_tokens / decode if completion_tokens >= 8 and decode > 0 else 0.0
        with self._lock:
            old = self._speed
            w = 1.0 if old.samples == 0 else _SPEED_WEIGHT

            def avg(prev: float, new: float) -> float:
                if not new:
                    return prev
                return new if not prev else prev + w * (new - prev)

            self._speed = ServerSpeed(
                tokens_per_s=round(avg(old.tokens_per_s, rate), 3),
                ttft_s=round(avg(old.ttft_s, ttft), 4),
                samples=old.samples + 1,
            )

    def _report(self, record: CallRecord) -> None:
        if self.on_call is None:
            return
        try:
            self.on_call(record)
        except Exception:  # accounting must never break a job
            log.exception("on_call hook failed")

    def _chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
        on_delta: Callable[[str], None] | None,
        started: float,
        seed: int | None = None,
    ) -> ChatResult:
        text_mode = self.profile.tool_mode == "text_tags"
        tools = tools or None
        tools_prompt = _tools_prompt(tools) if (tools and text_mode) else ""
        tools_cost = self.count_tokens(tools_prompt or (json.dumps(tools) if tools else ""))
        sink = None
        if on_delta is not None:
            hide = ("think", "tool_call") if tools or text_mode else ("think",)
            unwrap = ("answer",) if text_mode else ()
            holdback = self.think_holdback if self.profile.think_tags else 0
            sink = _DeltaSink(on_delta, lambda: _VisibleFilter(hide=hide, unwrap=unwrap, holdback=holdback))

        for overflow_try in range(self.context_retries + 1):
            fitted, send_max, prompt_estimate = self._fit_request(messages, tools_cost, max_tokens)
            body: dict[str, Any] = {**self.profile.extra_body, "model": self.model, "temperature": temperature}
            body["messages"] = _to_text_tags(fitted, tools_prompt) if text_mode else _normalize(fitted)
            body["max_tokens"] = send_max
            if seed is not None:
                body["seed"] = seed
            if tools and not text_mode:
                body["tools"] = tools
                body["tool_choice"] = "auto"
            if tools and text_mode and self.profile.tool_stop:
                body["stop"] = list(self.profile.tool_stop)
            if response_format is not None:
                body["response_format"] = response_format
            if sink is not None:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
            try:
                raw = self._send(body, sink)
            except LLMBadRequest as e:
                if e.status not in (400, 413) or not is_context_error(str(e)) or overflow_try >= self.context_retries:
                    raise
                if not self._learn_window(str(e)):  # a wrong window, or our estimate ran low
                    self._calibrate(str(e), prompt_estimate)  # then shrink harder and try again
                continue
            result = self._finish(raw, tools, text_mode, prompt_estimate, started)
            self._measure(raw, result.usage.completion_tokens)
            return result
        raise AssertionError("unreachable")  # the loop returns or raises

    def _fit_request(
        self, messages: list[dict[str, Any]], tools_cost: int, max_tokens: int | None
    ) -> tuple[list[dict[str, Any]], int, int]:
        """Fitted messages, the max_tokens to send and the prompt estimate."""
        window = self.context_window()
        margin = 16 + window // 100
        wanted = min(max_tokens, window // 2) if max_tokens else min(8192, window // 4)
        fitted = self.fit_messages(messages, reserve=wanted + tools_cost)
        prompt = self._messages_tokens(fitted) + tools_cost
        room = window - prompt - margin
        if max_tokens:
            send_max = max(1, min(max_tokens, room))
        else:
            send_max = max(1, room)  # no explicit cap: let it write as much as fits
        return fitted, send_max, prompt

    def _finish(
        self, raw: _Raw, tools: list[dict[str, Any]] | None, text_mode: bool, prompt_estimate: int, started: float
    ) -> ChatResult:
        content, leaked = split_reasoning(raw.content)
        reasoning = "\n".join(r for r in (raw.reasoning.strip(), leaked) if r)
        calls = [self._native_call(tc) for tc in raw.tool_calls]
        # Text tags: the profile's own format, or a native-profile server started without
        # a tool parser (hermes-style models then print <tool_call> blocks as content).
        if (text_mode or (tools and not calls)) and "<tool_call>" in content:
            content, calls = parse_tool_call_tags(content)
        if text_mode:
            content = unwrap_answer(content)
        if tools is not None or calls:
            allowed = {_tool_name(t) for t in tools or []}
            for call in calls:
                if call.name not in allowed and not call.parse_error:
                    offered = ", ".join(sorted(allowed)) or "none"
                    call.parse_error = f"unknown tool {call.name!r} (available: {offered})"
        finish = raw.finish_reason or "stop"
        if calls and finish == "stop":  # text-tag calls end on a stop string; report them alike
            finish = "tool_calls"
        usage_in = raw.usage or {}
        usage = Usage(
            prompt_tokens=int(usage_in.get("prompt_tokens") or prompt_estimate),
            completion_tokens=int(
                usage_in.get("completion_tokens")
                or estimate_tokens(raw.content + raw.reasoning + "".join(tc["arguments"] for tc in raw.tool_calls))
            ),
        )
        return ChatResult(
            content=content,
            tool_calls=calls,
            reasoning=reasoning,
            usage=usage,
            finish_reason=finish,
            seconds=round(time.monotonic() - started, 4),
            model=raw.model or self.model,
        )

    @staticmethod
    def _native_call(tc: dict[str, Any]) -> ToolCall:
        args, raw, err = _parse_arguments(tc.get("arguments"))
        return ToolCall(
            id=tc.get("id") or _new_call_id(),
            name=tc.get("name") or "",
            arguments=args,
            raw_arguments=raw,
            parse_error=err,
        )

    # ---------------------------------------------------------------- HTTP with retries

    def _backoff(self, attempt: int) -> float:
        # Full exponential growth with jitter in [50%, 100%]: parallel workers that failed
        # together do not come back in lockstep.
        return min(self.backoff_max, self.backoff_base * (2**attempt)) * random.uniform(0.5, 1.0)

    def _send(self, body: dict[str, Any], sink: _DeltaSink | None) -> _Raw:
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            if sink is not None:
                sink.begin_attempt()
            try:
                return self._attempt(url, body, sink)
            except _Retryable as e:
                last = str(e)
                if attempt >= self.max_retries:
                    break
                delay = self._backoff(attempt) if e.retry_after is None else min(e.retry_after, 60.0)
                log.warning("LLM call failed (%s); retry %d/%d in %.2fs", last, attempt + 1, self.max_retries, delay)
                time.sleep(delay)
        raise LLMUnavailable(
            one_line(f"the model server at {self.base_url} failed {self.max_retries + 1} times; last error: {last}")
        )

    def _attempt(self, url: str, body: dict[str, Any], sink: _DeltaSink | None) -> _Raw:
        sent_at = time.monotonic()
        raw = self._attempt_once(url, body, sink, sent_at)
        raw.sent_at, raw.done_at = sent_at, time.monotonic()
        return raw

    def _attempt_once(self, url: str, body: dict[str, Any], sink: _DeltaSink | None, sent_at: float) -> _Raw:
        deadline = sent_at + (self.stream_deadline if sink is not None else self.timeout)
        try:
            with self._http.stream("POST", url, json=body) as resp:
                if resp.status_code >= 400:
                    raw_error = self._read_body(resp, deadline, _ERROR_BODY_LIMIT)
                    self._raise_for_status(resp, raw_error, has_format="response_format" in body)
                if sink is not None:
                    return self._read_sse(resp, deadline, sink)
                raw_body = self._read_body(resp, deadline, _RESPONSE_LIMIT)
        except httpx.TimeoutException as e:
            raise _Retryable(f"timeout ({type(e).__name__})") from e
        except (httpx.NetworkError, httpx.RemoteProtocolError) as e:
            raise _Retryable(f"{type(e).__name__}: {e}") from e
        try:
            data = json.loads(raw_body)
        except ValueError as e:
            raise _Retryable("the server answered with invalid JSON") from e
        return _parse_completion(data)

    @staticmethod
    def _read_body(resp: httpx.Response, deadline: float, limit: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in resp.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if time.monotonic() > deadline:
                raise _Retryable("deadline exceeded while reading the answer")
            if size > limit:
                break
        return b"".join(chunks)

    @staticmethod
    def _raise_for_status(resp: httpx.Response, raw: bytes, *, has_format: bool = False) -> None:
        status = resp.status_code
        message = one_line(_error_message(raw) or resp.reason_phrase)
        if has_format and status >= 500 and _FORMAT_ERROR.search(message) and not is_context_error(message):
            # llama-cpp-python answers an unsupported response_format with a 500 validation
            # error: retrying the same request cannot help, stepping down can.
            raise LLMBadRequest(f"HTTP {status}: {message}", status=status)
        if status in (408, 425, 429) or status >= 500:
            retry_after = None
            header = resp.headers.get("retry-after")
            if header:
                try:
                    retry_after = max(0.0, float(header))
                except ValueError:
                    retry_after = None  # an HTTP date: fall back to our own backoff
            raise _Retryable(f"HTTP {status}: {message}", retry_after)
        raise LLMBadRequest(f"HTTP {status}: {message}", status=status)

    def _read_sse(self, resp: httpx.Response, deadline: float, sink: _DeltaSink) -> _Raw:
        raw = _Raw()
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        done = False
        for line in resp.iter_lines():
            if time.monotonic() > deadline:
                raise _Retryable("stream deadline exceeded")
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(data)
            except ValueError as e:
                raise _Retryable("invalid SSE chunk") from e
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                err = chunk["error"]
                msg = one_line(str(err.get("message") if isinstance(err, dict) else err))
                code = err.get("code") if isinstance(err, dict) else None
                if isinstance(code, int) and 400 <= code < 500 and code not in (408, 429):
                    raise LLMBadRequest(f"HTTP {code}: {msg}", status=code)
                raise _Retryable(f"error in stream: {msg}")
            raw.model = chunk.get("model") or raw.model
            if not raw.first_token_at and any(
                (c.get("delta") or {}).get(k) for c in chunk.get("choices") or [] for k in _TOKEN_KEYS
            ):
                raw.first_token_at = time.monotonic()
            if chunk.get("usage"):
                raw.usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                thought = delta.get("reasoning_content") or delta.get("reasoning")
                if thought:
                    reasoning.append(thought)
                    sink.reasoning_seen()
                text = delta.get("content")
                if text:
                    content.append(text)
                    sink.content(text)
                for tc in delta.get("tool_calls") or []:
                    idx = tc.get("index")
                    idx = idx if isinstance(idx, int) else len(calls)
                    slot = calls.setdefault(idx, {"id": "", "name": "", "arguments": []})
                    slot["id"] = slot["id"] or tc.get("id") or ""
                    fn = tc.get("function") or {}
                    slot["name"] = slot["name"] or fn.get("name") or ""
                    args = fn.get("arguments")
                    if isinstance(args, dict):
                        slot["arguments"] = [json.dumps(args)]
                    elif args:
                        slot["arguments"].append(args)
                if choice.get("finish_reason"):
                    raw.finish_reason = choice["finish_reason"]
        if not done and not raw.finish_reason:
            raise _Retryable("the stream ended before it was complete")
        sink.end()
        raw.content = "".join(content)
        raw.reasoning = "".join(reasoning)
        raw.tool_calls = [
            {"id": s["id"], "name": s["name"], "arguments": "".join(s["arguments"])} for _, s in sorted(calls.items())
        ]
        return raw

    # ---------------------------------------------------------------- structured output

    def structured(
        self,
        messages: list[dict[str, Any]],
        schema: type[M],
        *,
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
        key = (self.base_url, self.model)
        level = format_level(self.base_url, self.model)
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
                result = self.chat(
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
                if cut_off and attempt < max_attempts and not _is_closed_json(raw):
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


# --------------------------------------------------------------------------- structured-output levels

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


def _is_closed_json(text: str) -> bool:
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


# --------------------------------------------------------------------------- helpers


def _window_from_models(resp: httpx.Response, model: str) -> int | None:
    """vLLM's ``max_model_len`` (or a look-alike key) from ``GET /v1/models``."""
    try:
        data = resp.json().get("data") or []
    except (ValueError, AttributeError):
        return None
    entries = [d for d in data if isinstance(d, dict)]
    entries.sort(key=lambda d: d.get("id") != model)  # our model first, if listed
    for entry in entries:
        for key in ("max_model_len", "context_length", "context_window", "max_context_length", "n_ctx"):
            value = entry.get(key)
            if isinstance(value, int) and value > 0:
                return value
        meta = entry.get("meta")  # llama.cpp's server: {"meta": {"n_ctx_train": …}}
        if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int) and meta["n_ctx"] > 0:
            return int(meta["n_ctx"])
    return None


def is_local_url(url: str) -> bool:
    host = (httpx.URL(url).host or "").lower()
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.startswith("127.")


def _water_level(costs: list[int], excess: int, floor: int) -> int:
    """The largest cap >= floor such that cutting every cost above it removes ``excess``
    (or ``floor`` if even that is not enough)."""
    lo, hi = floor, max(costs)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(c - mid for c in costs if c > mid) >= excess:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content, ensure_ascii=False)


def _tool_name(tool: dict[str, Any]) -> str:
    fn = tool.get("function")
    return str((fn if isinstance(fn, dict) else tool).get("name", ""))


def _normalize(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI wire format: tool-call arguments as JSON strings, tool results as text."""
    out = []
    for msg in messages:
        m = dict(msg)
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                tc = dict(tc)
                fn = dict(tc.get("function") or {})
                if not isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.dumps(fn.get("arguments") or {}, ensure_ascii=False)
                tc["function"] = fn
                tc.setdefault("type", "function")
                calls.append(tc)
            m["tool_calls"] = calls
        if m.get("role") == "tool" and not isinstance(m.get("content"), str):
            m["content"] = _text_of(m.get("content"))
        out.append(m)
    return out


def _tools_prompt(tools: list[dict[str, Any]]) -> str:
    """Tool descriptions in the Qwen/Hermes system-prompt format Tongyi was trained on."""
    lines = "\n".join(
        json.dumps(t if "function" in t else {"type": "function", "function": t}, ensure_ascii=False) for t in tools
    )
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def _to_text_tags(messages: list[dict[str, Any]], tools_prompt: str) -> list[dict[str, Any]]:
    """Rewrite an OpenAI-style conversation for a model that speaks tools as text: the
    tools go into the system prompt, assistant tool calls become <tool_call> blocks and
    tool results become <tool_response> user turns (consecutive ones merged)."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            block = f"<tool_response>\n{_text_of(msg.get('content'))}\n</tool_response>"
            if out and out[-1].get("_tool_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_results": True})
            continue
        if role == "assistant" and msg.get("tool_calls"):
            parts = [_text_of(msg.get("content")).strip()]
            for tc in msg["tool_calls"]:
                fn = tc.get("function") or {}
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError:
                        pass  # keep the raw text; the model sees what it wrote
                call = json.dumps({"name": fn.get("name", ""), "arguments": args}, ensure_ascii=False)
                parts.append(f"<tool_call>\n{call}\n</tool_call>")
            out.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
            continue
        out.append({k: v for k, v in msg.items() if k in ("role", "content", "name")})
    for m in out:
        m.pop("_tool_results", None)
    if tools_prompt:
        if out and out[0].get("role") == "system":
            out[0] = {**out[0], "content": f"{_text_of(out[0].get('content')).rstrip()}\n\n{tools_prompt}"}
        else:
            out.insert(0, {"role": "system", "content": tools_prompt})
    return out


def _with_schema_hint(messages: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation with the schema appended to its last message (once)."""
    if not messages:
        return []
    hint = f"\n\nAnswer with one JSON object matching this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
    last = messages[-1]
    text = _text_of(last.get("content"))
    return [*messages[:-1], {**last, "content": text if "JSON schema:" in text else text + hint}]


_FORMAT_ERROR = textre.compile(
    r"response_format|response format|json_schema|json_object|guided|grammar|schema|structured output",
    textre.IGNORECASE,
)


def _rejects_response_format(e: LLMBadRequest) -> bool:
    """A refusal (400/422 validation, or the 500 llama-cpp-python answers) that names the
    response format: asking in a simpler format may work."""
    msg = str(e)
    return e.status >= 400 and not is_context_error(msg) and bool(_FORMAT_ERROR.search(msg))


def _error_message(raw: bytes) -> str:
    try:
        obj = json.loads(raw)
    except ValueError:
        return raw[:500].decode("utf-8", "replace").strip()
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err)
        if isinstance(err, str):
            return err
        for key in ("message", "detail"):
            if obj.get(key):
                return str(obj[key])
    return str(obj)[:500]


def _parse_completion(data: Any) -> _Raw:
    if not isinstance(data, dict) or not data.get("choices"):
        raise _Retryable("the answer has no choices")
    choice = data["choices"][0] or {}
    message = choice.get("message") or {}
    calls = []
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function") or {}
        args = fn.get("arguments")
        calls.append(
            {
                "id": tc.get("id") or "",
                "name": fn.get("name") or "",
                "arguments": json.dumps(args) if isinstance(args, dict) else str(args or ""),
            }
        )
    return _Raw(
        content=_text_of(message.get("content")),
        reasoning=str(message.get("reasoning_content") or message.get("reasoning") or ""),
        tool_calls=calls,
        finish_reason=str(choice.get("finish_reason") or ""),
        usage=data.get("usage") if isinstance(data.get("usage"), dict) else None,
        model=str(data.get("model") or ""),
    )
