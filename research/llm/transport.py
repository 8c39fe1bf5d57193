"""HTTP to an OpenAI-compatible server: ``POST /chat/completions``, plain or streamed (SSE).

Hard timeouts (a read timeout, a whole-answer deadline for plain calls and a longer one for
streams), capped body sizes, retries with exponential backoff and jitter (``Retry-After``
respected) on connection errors, timeouts, 408/425/429, 5xx and streams that break off; other 4xx
fail at once. docs/models.md says why this is not the ``openai`` SDK.
"""

from __future__ import annotations

import json
import logging
import random
import time
from typing import Any

import httpx

from research.llm.messages import text_of
from research.llm.parsing import names_response_format, one_line
from research.llm.stream import DeltaSink
from research.llm.types import LLMBadRequest, LLMUnavailable, RawReply
from research.tls import tls_context

log = logging.getLogger(__name__)

_ERROR_BODY_LIMIT = 64 * 1024
_RESPONSE_LIMIT = 32 * 1024 * 1024
_TOKEN_KEYS = ("content", "reasoning_content", "reasoning", "tool_calls")


class _Retryable(Exception):
    """A failure worth another attempt (connection, timeout, 408/425/429, 5xx, a broken stream);
    the retry loop turns the last one into ``LLMUnavailable``."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Transport:
    """POSTs chat completions to one server: one attempt at a time under a deadline, retried
    with backoff while the failure is transient. Thread-safe (one pooled httpx client)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        timeout: float,
        max_retries: int,
        backoff_base: float,
        backoff_max: float,
        stream_deadline: float,
    ) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.stream_deadline = stream_deadline
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            verify=tls_context(),
            # Proxy variables from the environment are for the outside world; a local model
            # server must be reached directly (hosted APIs behind a proxy still honour them).
            trust_env=not is_local_url(self.base_url),
        )

    def close(self) -> None:
        self.http.close()

    def _backoff(self, attempt: int) -> float:
        # Full exponential growth with jitter in [50%, 100%]: parallel workers that failed
        # together do not come back in lockstep.
        return min(self.backoff_max, self.backoff_base * (2**attempt)) * random.uniform(0.5, 1.0)

    def send(self, body: dict[str, Any], sink: DeltaSink | None) -> RawReply:
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

    def _attempt(self, url: str, body: dict[str, Any], sink: DeltaSink | None) -> RawReply:
        sent_at = time.monotonic()
        raw = self._attempt_once(url, body, sink, sent_at)
        raw.sent_at, raw.done_at = sent_at, time.monotonic()
        return raw

    def _attempt_once(self, url: str, body: dict[str, Any], sink: DeltaSink | None, sent_at: float) -> RawReply:
        deadline = sent_at + (self.stream_deadline if sink is not None else self.timeout)
        try:
            with self.http.stream("POST", url, json=body) as resp:
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
        return parse_completion(data)

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
        message = one_line(error_message(raw) or resp.reason_phrase)
        if has_format and status >= 500 and names_response_format(message):
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

    def _read_sse(self, resp: httpx.Response, deadline: float, sink: DeltaSink) -> RawReply:
        raw = RawReply()
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


def is_local_url(url: str) -> bool:
    host = (httpx.URL(url).host or "").lower()
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.startswith("127.")


def error_message(raw: bytes) -> str:
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


def parse_completion(data: Any) -> RawReply:
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
    return RawReply(
        content=text_of(message.get("content")),
        reasoning=str(message.get("reasoning_content") or message.get("reasoning") or ""),
        tool_calls=calls,
        finish_reason=str(choice.get("finish_reason") or ""),
        usage=data.get("usage") if isinstance(data.get("usage"), dict) else None,
        model=str(data.get("model") or ""),
    )
