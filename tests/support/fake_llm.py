"""A fake OpenAI-compatible model server that answers like vLLM, for tests and demos.

Runs a ThreadingHTTPServer on 127.0.0.1 in a background thread (one thread per
connection, so a slow or hanging request never blocks the others). What it says is
decided by a *responder* (request body → Reply); how it says it (latency, streaming,
failures) is decided here:

    with FakeLLM(lambda body: Reply(content="hi"), ttft=0.05, tokens_per_s=200) as fake:
        client = LLMClient(base_url=fake.base_url, model=fake.model)
        fake.inject("503", times=2)   # the next two chat requests fail with HTTP 503

Endpoints: GET /v1/models (vLLM's ``max_model_len``), GET /health and
POST /v1/chat/completions (plain and SSE streaming with vLLM's chunk shapes, tool-call
deltas split over several chunks, ``reasoning_content`` deltas, a usage chunk when
``stream_options.include_usage``, ``data: [DONE]``). Like vLLM, a request whose prompt
plus ``max_tokens`` exceeds ``max_model_len`` gets a 400 "maximum context length" error
(the prompt is estimated at 4 characters per token).
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Reply:
    content: str = ""
    tool_calls: list[dict[str, Any]] | None = None  # [{"name": ..., "arguments": {...} or raw str, "id"?: ...}]
    reasoning: str = ""
    finish_reason: str | None = None
    status: int = 200
    error_body: dict[str, Any] | None = None
    # A recorded stream: these chunk objects are sent verbatim as ``data:`` events (then
    # ``[DONE]``) to a streaming request, so tests replay a real server's exact shapes.
    sse: list[dict[str, Any]] | None = None


Responder = Callable[[dict[str, Any]], Reply]

INJECTIONS = (
    "503",
    "429",
    "hang",
    "malformed_json",
    "truncated_stream",
    "unknown_tool",
    "endless_tool_calls",
    "think_leak",
    "think_leak_tags",
    "think_leak_bare",
    "context_overflow",
    "length_mid_json",
    "hermes_leak",
)

#: What llama-cpp-python 0.3.36's server answers to ``response_format: json_schema`` (recorded
#: against the real server): its request model accepts only ``text`` and ``json_object``
#: (+ ``schema``), and the validation error comes back as an HTTP 500 with the failing frame.
# An OpenAI tool definition for tests that check tool calls, against this double and real servers alike.
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}

LLAMA_CPP_FORMAT_ERROR = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n"
    '  File "/srv/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
    "    POST /v1/chat/completions"
)


# --------------------------------------------------------------------------- default responder


def example_for_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small instance that satisfies a (pydantic-generated) JSON schema."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if depth > 8:
        return None
    if "$ref" in schema:
        return example_for_schema(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return example_for_schema(options[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: example_for_schema(sub, defs, depth + 1) for name, sub in props.items()}
    if kind == "array":
        n = int(schema.get("minItems", 1))
        return [example_for_schema(schema.get("items", {}), defs, depth + 1) for _ in range(n)]
    if kind == "string":
        return "x" * int(schema.get("minLength", 0)) or "example"
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return True
    return None


def _last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return _text(msg.get("content"))
    return ""


def echo_responder(body: dict[str, Any]) -> Reply:
    """Out-of-the-box answers: a schema-conforming example for JSON-schema requests,
    ``{}``-ish JSON for json_object, else an echo of the last user message."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        return Reply(content=json.dumps(example_for_schema(schema), ensure_ascii=False))
    if fmt.get("type") == "json_object":
        return Reply(content=json.dumps({"answer": _last_user_text(body)[:200]}, ensure_ascii=False))
    return Reply(content=f"You said: {_last_user_text(body)[:500]}")


# --------------------------------------------------------------------------- helpers


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content)


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's tokenizer: 4 characters per token, plus a little per message."""
    chars = 0
    for msg in body.get("messages") or []:
        chars += len(_text(msg.get("content"))) + 16
        if msg.get("tool_calls"):
            chars += len(json.dumps(msg["tool_calls"]))
    if body.get("tools"):
        chars += len(json.dumps(body["tools"]))
    return chars // 4 + 1


def _pieces(text: str) -> list[str]:
    """Split text into word-sized "tokens" for pacing and chunking."""
    return re.findall(r"\s*\S+|\s+", text) if text else []


def _context_error(window: int, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "object": "error",
        "message": (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the completion). "
            "Please reduce the length of the messages or completion."
        ),
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }


def _error(status: int, message: str) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": "Error", "param": None, "code": status}


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # hanging handlers must not keep the test process alive
    allow_reuse_address = True
    request_queue_size = 256  # 50 jobs × parallel steps connect at once
    fake: FakeLLM


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive like uvicorn; streams use chunked encoding
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, add=False)
        with contextlib.suppress(OSError):
            super().finish()

    # -- plumbing

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def cut(self) -> None:
        """Drop the connection abruptly (no terminating chunk, no complete body)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- routes

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        fake = self.server.fake
        if path in ("/v1/models", "/models"):
            if not fake._authorized(self.headers.get("Authorization")):
                return self.send_json(401, _error(401, "Unauthorized"))
            return self.send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": fake.model,
                            "object": "model",
                            "created": int(time.time()),
                            "owned_by": "vllm",
                            "root": fake.model,
                            "parent": None,
                            **({"max_model_len": fake.max_model_len} if fake.report_window else {}),
                        }
                    ],
                },
            )
        if path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self.send_json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path not in ("/v1/chat/completions", "/chat/completions"):
            return self.send_json(404, {"detail": "Not Found"})
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.send_json(400, _error(400, "invalid JSON body"))
        try:
            self.server.fake._chat(self, body)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away mid-answer
        return None


# --------------------------------------------------------------------------- the fake


class FakeLLM:
    """An OpenAI-compatible fake model server on 127.0.0.1 (see the module docstring)."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        ttft: float = 0.0,
        tokens_per_s: float = 0.0,
        model: str = "test-model",
        max_model_len: int = 32768,
        api_key: str | None = None,
        response_formats: tuple[str, ...] = ("json_schema", "json_object"),
        format_error_status: int = 400,
        report_window: bool = True,
        batch_slowdown: float = 0.0,
    ) -> None:
        self.responder: Responder = responder or echo_responder
        # Response formats this "server" supports; others are refused with
        # ``format_error_status`` (500 as llama-cpp-python does, 400/422 as others do).
        self.response_formats = response_formats
        self.format_error_status = format_error_status
        self.report_window = report_window  # False: /v1/models without max_model_len
        # Batching model: with n requests decoding at once each gets
        # tokens_per_s / (1 + batch_slowdown * (n - 1)), as on a GPU serving a batch
        # (aggregate throughput still grows, per-request speed falls). 0 = independent.
        self.batch_slowdown = batch_slowdown
        self._active = 0
        self.ttft = ttft
        self.tokens_per_s = tokens_per_s
        self.model = model
        self.max_model_len = max_model_len
        self.api_key = api_key  # when set, requests must carry "Authorization: Bearer <api_key>"
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._lock = threading.Lock()
        self._injections: collections.deque[str] = collections.deque()
        self._think_leaks = 0
        self._stopped = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()

    # -- lifecycle

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeLLM:
        self._stopped.clear()
        self._bind()
        return self

    def stop(self) -> None:
        self._stopped.set()  # releases "hang" requests and paced sleeps
        self.down()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def down(self) -> None:
        """Simulate the server going away: close the listening socket (new connections are
        refused) and every open connection (pooled keep-alive ones included)."""
        with self._lock:
            server, self._server = self._server, None
            thread, self._thread = self._thread, None
            conns = list(self._conns)
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def up(self) -> None:
        """Come back on the same port after ``down()``."""
        if self._server is None:
            self._bind()

    def _bind(self) -> None:
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.fake = self
        self.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        with self._lock:
            self._server, self._thread = server, thread
        thread.start()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    # -- configuration

    def set_responder(self, responder: Responder) -> None:
        self.responder = responder

    def inject(self, kind: str, times: int = 1) -> None:
        """Make the next ``times`` chat requests fail in the given way (queued in order)."""
        if kind not in INJECTIONS:
            raise ValueError(f"unknown injection {kind!r}; known: {', '.join(INJECTIONS)}")
        with self._lock:
            self._injections.extend([kind] * times)

    def pending_injections(self) -> list[str]:
        with self._lock:
            return list(self._injections)

    def _authorized(self, header: str | None) -> bool:
        return self.api_key is None or header == f"Bearer {self.api_key}"

    # -- chat

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopped.wait(seconds)

    def _pace(self) -> float:
        """Seconds per token for one request now, under the batching model."""
        if self.tokens_per_s <= 0:
            return 0.0
        with self._lock:
            n = max(1, self._active)
        return (1.0 + self.batch_slowdown * (n - 1)) / self.tokens_per_s

    @contextlib.contextmanager
    def _decoding(self) -> Iterator[None]:
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1

    def _chat(self, h: _Handler, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            kind = self._injections.popleft() if self._injections else ""
        if not self._authorized(h.headers.get("Authorization")):
            return h.send_json(401, _error(401, "Unauthorized"))
        if kind == "503":
            return h.send_json(503, _error(503, "Service Unavailable"))
        if kind == "429":
            return h.send_json(429, _error(429, "Too Many Requests"), {"Retry-After": "0"})
        if kind == "hang":
            self._stopped.wait()
            return h.cut()
        fmt = (body.get("response_format") or {}).get("type")
        if fmt and fmt != "text" and fmt not in self.response_formats:
            status = self.format_error_status
            message = LLAMA_CPP_FORMAT_ERROR if status >= 500 else f"response_format type {fmt!r} is not supported"
            kind_ = "internal_server_error" if status >= 500 else "invalid_request_error"
            return h.send_json(status, {"error": {"message": message, "type": kind_, "param": None, "code": None}})
        completion = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        prompt = prompt_tokens(body)
        if kind == "context_overflow":
            # Pretend the real tokenizer counted more than the client's estimate.
            return h.send_json(400, _context_error(self.max_model_len, int(prompt * 1.3) + 1, completion))
        if prompt + completion > self.max_model_len or prompt >= self.max_model_len:
            return h.send_json(400, _context_error(self.max_model_len, prompt, completion))
        try:
            reply = self.responder(body)
        except Exception as e:  # a broken responder is a test bug: make it loud
            return h.send_json(500, _error(500, f"responder failed: {type(e).__name__}: {e}"))
        if reply.status != 200:
            return h.send_json(reply.status, reply.error_body or _error(reply.status, f"HTTP {reply.status}"))
        reply = self._transform(kind, body, reply)
        if body.get("stream") and reply.sse is not None:
            return self._replay(h, reply.sse)
        if body.get("stream"):
            return self._stream(h, body, reply, prompt, truncated=kind == "truncated_stream")
        return self._complete(h, reply, prompt, truncated=kind == "truncated_stream")

    def _transform(self, kind: str, body: dict[str, Any], reply: Reply) -> Reply:
        if kind == "malformed_json":
            return Reply(content='{"malformed": true, "reason": "unterminated', reasoning=reply.reasoning)
        if kind == "length_mid_json":
            # The token limit struck inside a JSON object: half of it, finish_reason "length".
            text = reply.content or json.dumps({"title": "cut", "items": ["a", "b", "c"]})
            return Reply(content=text[: max(1, len(text) // 2)], finish_reason="length")
        if kind == "hermes_leak":
            # A server started without a tool parser: the hermes call arrives as plain content.
            name, args = _first_tool(body)
            call = json.dumps({"name": name, "arguments": args})
            return Reply(content=f"I will look this up.\n<tool_call>\n{call}\n</tool_call>")
        if kind == "unknown_tool":
            return self._tool_reply(body, "no_such_tool", {"query": "anything"})
        if kind == "endless_tool_calls":
            name, args = _first_tool(body)
            return self._tool_reply(body, name, args)
        if kind.startswith("think_leak"):
            with self._lock:
                self._think_leaks += 1
                n = self._think_leaks
            bare = kind == "think_leak_bare" or (kind == "think_leak" and n % 2 == 1)
            thought = "The user wants an answer. Let me think it through carefully."
            prefix = f"{thought}\n</think>\n\n" if bare else f"<think>\n{thought}\n</think>\n\n"
            return Reply(
                content=prefix + reply.content,
                tool_calls=reply.tool_calls,
                reasoning=reply.reasoning,
                finish_reason=reply.finish_reason,
            )
        return reply

    def _replay(self, h: _Handler, chunks: list[dict[str, Any]]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for chunk in chunks:
            h.write_chunk(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
            self._sleep(self.ttft if chunk is chunks[0] else 0.0)
        h.write_chunk(b"data: [DONE]\n\n")
        h.write_chunk(b"")

    @staticmethod
    def _tool_reply(body: dict[str, Any], name: str, args: dict[str, Any]) -> Reply:
        if body.get("tools"):
            return Reply(tool_calls=[{"name": name, "arguments": args}])
        # No OpenAI tools in the request: the client speaks tools as text tags.
        call = json.dumps({"name": name, "arguments": args})
        return Reply(content=f"<tool_call>\n{call}\n</tool_call>")

    def _wire_calls(self, reply: Reply) -> list[dict[str, Any]]:
        calls = []
        for tc in reply.tool_calls or []:
            args = tc.get("arguments", {})
            calls.append(
                {
                    "id": tc.get("id") or f"chatcmpl-tool-{uuid.uuid4().hex[:16]}",
                    "type": "function",
                    "function": {
                        "name": tc.get("name", ""),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        return calls

    def _finish_reason(self, reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _complete(self, h: _Handler, reply: Reply, prompt: int, *, truncated: bool) -> None:
        pieces = _pieces(reply.content) + _pieces(reply.reasoning)
        calls = self._wire_calls(reply)
        with self._decoding():
            if self.batch_slowdown > 0 and self.tokens_per_s > 0:
                self._sleep(self.ttft)
                for _ in pieces:  # the batch may grow or shrink while this request decodes
                    self._sleep(self._pace())
            else:
                self._sleep(self.ttft + (len(pieces) / self.tokens_per_s if self.tokens_per_s > 0 else 0.0))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content if (reply.content or not calls) else None,
            "tool_calls": calls,
        }
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        completion = len(pieces) + sum(len(c["function"]["arguments"]) // 4 + 1 for c in calls)
        data = json.dumps(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "logprobs": None,
                        "finish_reason": self._finish_reason(reply),
                        "stop_reason": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        ).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if truncated:
            h.wfile.write(data[: len(data) // 2])  # promised more than we send
            return h.cut()
        h.wfile.write(data)
        h.wfile.flush()
        return None

    def _stream(self, h: _Handler, body: dict[str, Any], reply: Reply, prompt: int, *, truncated: bool) -> None:
        cid = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())

        def event(choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> None:
            obj: dict[str, Any] = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model,
                "choices": choices,
            }
            if usage is not None:
                obj["usage"] = usage
            h.write_chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

        def delta(d: dict[str, Any], finish: str | None = None) -> None:
            event([{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}])

        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream; charset=utf-8")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        delta({"role": "assistant", "content": ""})
        self._sleep(self.ttft)
        with self._decoding():
            return self._stream_body(h, body, reply, prompt, truncated=truncated, event=event, delta=delta)

    def _stream_body(self, h: _Handler, body: dict[str, Any], reply: Reply, prompt: int, *, truncated: bool,
                     event: Callable[..., None], delta: Callable[..., None]) -> None:
        reasoning, content = _pieces(reply.reasoning), _pieces(reply.content)
        cut_at = max(1, (len(reasoning) + len(content)) // 2) if truncated else -1
        sent = 0
        for field_name, pieces in (("reasoning_content", reasoning), ("content", content)):
            for piece in pieces:
                if sent == cut_at:
                    return h.cut()
                delta({field_name: piece})
                sent += 1
                self._sleep(self._pace())
        if truncated:
            return h.cut()  # nothing (or too little) to cut in the middle of: cut here
        completion = sent
        for i, call in enumerate(self._wire_calls(reply)):
            fn = call["function"]
            delta(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": fn["name"], "arguments": ""},
                        }
                    ]
                }
            )
            args = fn["arguments"]
            step = max(1, len(args) // 3)
            for start in range(0, len(args), step):  # arguments arrive in fragments, as from vLLM
                delta({"tool_calls": [{"index": i, "function": {"arguments": args[start : start + step]}}]})
                completion += 1
                self._sleep(self._pace())
        delta({}, self._finish_reason(reply))
        if (body.get("stream_options") or {}).get("include_usage"):
            event([], {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
        h.write_chunk(b"data: [DONE]\n\n")
        h.write_chunk(b"")
        return None


def _first_tool(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Name and plausible arguments of the first tool offered (OpenAI tools or a text
    <tools> block in the system prompt)."""
    tools = body.get("tools") or []
    if not tools:
        system = next((_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"), "")
        block = re.search(r"<tools>\s*(.*?)\s*</tools>", system, re.DOTALL)
        for line in block.group(1).splitlines() if block else []:
            with contextlib.suppress(ValueError):
                tools.append(json.loads(line))
    if not tools:
        return "search", {"query": "more"}
    fn = tools[0].get("function", tools[0])
    params = fn.get("parameters") or {}
    args = example_for_schema(params) if params.get("properties") else {}
    return str(fn.get("name", "tool")), args if isinstance(args, dict) else {}


def run_forever(port: int = 8001) -> None:
    """``python -m tests.support.fake_llm`` serves the echo responder on a fixed port."""
    fake = FakeLLM()
    fake.port = port
    fake.start()
    print(f"fake LLM on {fake.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    run_forever()
