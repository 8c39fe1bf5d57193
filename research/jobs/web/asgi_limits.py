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
