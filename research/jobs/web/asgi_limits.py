"""Cap HTTP request bodies as they stream in, before Django spools them to disk.

Django's ASGI handler reads the whole body into a temporary file before any view or
upload handler runs, so a request without Content-Length (chunked) could fill the disk
no matter what the views check. This middleware sits in front of the Django app and
counts body bytes as they arrive: once a request passes its limit it stops feeding
Django (which then drops the request) and answers 413 itself. A declared
Content-Length over the limit is refused before the body is read.

Limits: knowledge-base upload URLs (/kb/<id>/upload/) may carry the knowledge upload
limit (research.knowledge.uploads.request_limit) plus slack, so the upload view can
still answer with its own, more precise message; every other URL at most
settings.REQUEST_MAX_BODY_BYTES.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

from research import textre

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]  # Django's handler types its arguments narrower

KB_UPLOAD_PATH = textre.compile(r"^/kb/\d+/upload/?$")
KB_SLACK_BYTES = 64 * 1024


def body_limit(path: str) -> int:
    """The most body bytes a request to `path` may carry."""
    if KB_UPLOAD_PATH.match(path):
        from research.knowledge.uploads import request_limit

        return request_limit() + KB_SLACK_BYTES
    return int(settings.REQUEST_MAX_BODY_BYTES)


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or []:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_413(send: Send, limit: int) -> None:
    body = f"Request body too large: the limit for this URL is {limit:,} bytes.\n".encode()
    await send({
        "type": "http.response.start",
        "status": 413,
        "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")],
    })
    await send({"type": "http.response.body", "body": body})


class BodySizeLimitMiddleware:
    """ASGI middleware: 413 for HTTP requests whose body passes the limit for their path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope.get("path", ""))
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await _send_413(send, limit)
            return

        received = 0
        too_large = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            if too_large:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Tell Django the client went away: it discards what it spooled and sends nothing.
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if too_large:
                return  # the 413 below is the only answer
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, limited_receive, guarded_send)
        if too_large and not started:
            await _send_413(send, limit)


# --- daphne: cap the body before Twisted spools it ---------------------------------------------------------
# daphne (Twisted) reads a whole request body into a temporary file before it calls the ASGI app at all, so
# the middleware above runs only once a 500 MB body is already on disk (issue 34, case 6). These hooks
# count the bytes as Twisted receives them: past body_limit(path) (declared or streamed) the rest is read
# and dropped, nothing more is stored, and the request is answered 413 without reaching the app. Reading
# to the end (rather than closing at once) lets every client see the 413 instead of a reset connection;
# in the compose shape the proxy in front refuses such bodies before they reach daphne at all.


def install_daphne_body_cap() -> bool:
    """Patch daphne's request class (once; a no-op where daphne is not installed). Returns whether it is."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:
        return False
    if getattr(WebRequest, "_body_cap", False):
        return True
    got_length = WebRequest.gotLength
    content_chunk = WebRequest.handleContentChunk
    process = WebRequest.process

    def capped_got_length(self: Any, length: int | None) -> None:
        path = getattr(self.channel, "_path", b"/").split(b"?", 1)[0].decode("latin-1")
        self._body_limit, self._body_seen = body_limit(path), 0
        self._body_refused = length is not None and length > self._body_limit
        got_length(self, 0 if self._body_refused else length)  # a refused body gets an empty in-memory buffer

    def capped_content_chunk(self: Any, data: bytes) -> None:
        self._body_seen = getattr(self, "_body_seen", 0) + len(data)
        if self._body_seen > getattr(self, "_body_limit", self._body_seen):
            self._body_refused = True
        if not getattr(self, "_body_refused", False):
            content_chunk(self, data)

    def capped_process(self: Any) -> Any:
        if not getattr(self, "_body_refused", False):
            return process(self)
        body = f"Request body too large: the limit for this URL is {self._body_limit:,} bytes.\n".encode()
        self.handle_reply({"type": "http.response.start", "status": 413,
                           "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]})
        self.handle_reply({"type": "http.response.body", "body": body})
        return None

    WebRequest.gotLength = capped_got_length  # type: ignore[method-assign]
    WebRequest.handleContentChunk = capped_content_chunk  # type: ignore[method-assign]
    WebRequest.process = capped_process  # type: ignore[method-assign]
    WebRequest._body_cap = True  # type: ignore[attr-defined]
    return True
