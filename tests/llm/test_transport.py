"""research/llm/transport.py against servers that misbehave at the byte level: the guarantees
docs/models.md gives as the reasons the transport is hand-written rather than the openai SDK."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator

import pytest

from research.llm.client import LLMClient
from research.llm.types import LLMBadRequest, LLMUnavailable
from tests.support.fake_llm import FakeLLM, Reply

USER = [{"role": "user", "content": "Hello?"}]
ANSWER = json.dumps({"model": "m", "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}).encode()


class _RawServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[socket.socket, threading.Event], None]], str]]:
    """A loopback HTTP server whose handler writes bytes by hand; returns the base URL."""
    stop = threading.Event()
    servers: list[_RawServer] = []

    def start(write: Callable[[socket.socket, threading.Event], None]) -> str:
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:  # the request head; the body is not needed
                    data += self.request.recv(65536)
                try:
                    write(self.request, stop)
                except OSError:
                    pass  # the client hung up, as it should

        server = _RawServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    stop.set()
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_trickled_plain_answer_is_cut_by_the_whole_answer_deadline(raw_server) -> None:
    # Each byte comes well within the read timeout, so only the whole-answer deadline can end it.
    def trickle(conn: socket.socket, stop: threading.Event) -> None:
        body = ANSWER + b" " * 10_000
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(len(body)):
            if stop.wait(0.1):
                return
            conn.sendall(body[i : i + 1])

    client = LLMClient(base_url=raw_server(trickle), model="m", timeout=1.0, max_retries=0, context_window=4096)
    with pytest.raises(LLMUnavailable, match="deadline exceeded"):
        client.chat(USER)
    client.close()


def test_an_error_body_is_read_only_up_to_its_cap(raw_server) -> None:
    # A 400 announcing 100 MB that sends 1 MB and then stalls: read in full, it would end in a
    # timeout (LLMUnavailable); capped, the refusal is reported as what it is.
    def huge_error(conn: socket.socket, stop: threading.Event) -> None:
        head = b'{"error": {"message": "no such model '
        conn.sendall(
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n" + head
        )
        conn.sendall(b"x" * 1_000_000)
        stop.wait(30)

    client = LLMClient(base_url=raw_server(huge_error), model="m", timeout=2.0, max_retries=0, context_window=4096)
    with pytest.raises(LLMBadRequest, match="no such model") as info:
        client.chat(USER)
    assert info.value.status == 400 and len(str(info.value)) < 1000  # one line, not the body
    client.close()


def test_a_stream_ending_with_done_but_no_finish_reason_is_complete(fake: FakeLLM, client: LLMClient) -> None:
    # Some servers never name a finish_reason; `data: [DONE]` alone says the stream is whole.
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "model": "test-model",
               "choices": [{"index": 0, "delta": {"content": piece}}]} for piece in ("Solar ", "grew.")]
    fake.set_responder(lambda body: Reply(sse=chunks))
    deltas: list[str] = []
    result = client.chat(USER, on_delta=deltas.append)
    assert result.content == "Solar grew." == "".join(deltas)
    assert result.finish_reason == "stop" and len(fake.requests) == 1  # not retried as a broken stream
