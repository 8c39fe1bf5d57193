"""The job WebSocket accepts only the site's own origin: scheme, host and port all count (real sockets, daphne)."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from research.jobs import services

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _attempt(url: str, origin: str | None, cookie: str) -> int:
    """101 when the socket opened (and the job's first event arrived), else the refusal's status/close code."""

    async def go() -> int:
        headers = {"Cookie": f"sessionid={cookie}"}
        try:
            async with websockets.connect(url, origin=origin, additional_headers=headers) as ws:  # type: ignore[arg-type]
                await ws.send('{"type": "subscribe", "after": 0}')
                await asyncio.wait_for(ws.recv(), timeout=20)
                return 101
        except websockets.exceptions.InvalidStatus as exc:
            return exc.response.status_code
        except websockets.exceptions.ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else -1

    return asyncio.run(go())


@pytest.fixture
def socket_target(alice, asgi_server, client) -> tuple[str, str, str]:
    job = services.job_create(user=alice, question="Origin check?", options={"engine": "offline"})
    client.force_login(alice)
    url = asgi_server.url.replace("http://", "ws://") + f"/ws/jobs/{job.pk}/"
    return url, asgi_server.url, client.cookies["sessionid"].value


def test_own_origin_is_accepted(socket_target):
    url, own, cookie = socket_target
    assert _attempt(url, own, cookie) == 101


@pytest.mark.parametrize(
    "origin",
    [
        "other port",  # same host, another port: AllowedHostsOriginValidator let this through
        "https same port",  # another scheme
        "http://localhost:{port}",  # an allowed host name, but not the origin this socket was opened on
        "http://evil.example",
        "null",
        None,  # no Origin header at all
    ],
)
def test_foreign_origins_are_refused_at_the_handshake(socket_target, origin):
    url, own, cookie = socket_target
    port = int(own.rsplit(":", 1)[1])
    spelled = {
        "other port": f"http://127.0.0.1:{port + 1}",
        "https same port": f"https://127.0.0.1:{port}",
    }.get(origin or "", origin)
    if spelled is not None:
        spelled = spelled.format(port=port)
    assert _attempt(url, spelled, cookie) == 403
