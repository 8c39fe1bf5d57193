"""Malformed frames on the job socket (real sockets, daphne): a clean close with a code and a reason, never
1011 from an unhandled exception (issue 25: garbage, after=1e309 and deep JSON closed with 1011)."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from research.jobs import services
from research.jobs.web.consumers import (
    CLOSE_BAD_REQUEST,
    CLOSE_INVALID,
    CLOSE_TOO_BIG,
    CLOSE_UNSUPPORTED,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def socket_target(alice, asgi_server, client) -> tuple[str, str, str]:
    job = services.job_create(user=alice, question="Frames?", options={"engine": "offline"})
    client.force_login(alice)
    url = asgi_server.url.replace("http://", "ws://") + f"/ws/jobs/{job.pk}/"
    return url, asgi_server.url, client.cookies["sessionid"].value


def _send(target: tuple[str, str, str], frame: str | bytes) -> tuple[int, list[dict]]:
    """Send one frame; (the close code, the messages received before the close)."""
    url, origin, cookie = target

    async def go() -> tuple[int, list[dict]]:
        got: list[dict] = []
        async with websockets.connect(url, origin=origin, additional_headers={"Cookie": f"sessionid={cookie}"},  # type: ignore[arg-type]
                                      max_size=None) as ws:
            await ws.send(frame)
            try:
                while True:
                    got.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=20)))
            except websockets.exceptions.ConnectionClosed as exc:
                return (exc.rcvd.code if exc.rcvd else -1), got
        return -1, got

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("frame", "code", "words"),
    [
        ("garbage", CLOSE_INVALID, "not valid JSON"),
        ('{"type": "subscribe", "after": 1e309}', CLOSE_BAD_REQUEST, '"after" must be a whole number'),
        ('{"type": "subscribe", "after": 1' + "0" * 40 + "}", CLOSE_BAD_REQUEST, '"after" must be a whole number'),
        ("[" * 3000 + "]" * 3000, CLOSE_TOO_BIG, "frame too large"),
        ("[" * 2000 + "]" * 2000, CLOSE_INVALID, "not valid JSON"),  # deeper than the parser goes, under the cap
        ('{"type": "subscribe", "after": 0, "pad": "' + "x" * 500_000 + '"}', CLOSE_TOO_BIG, "frame too large"),
        (b"\x00\x01binary", CLOSE_UNSUPPORTED, "binary frames"),
    ],
    ids=["garbage", "after-inf", "after-huge", "deep-and-big", "deep-json", "huge-frame", "binary"],
)
def test_a_malformed_frame_closes_cleanly_with_a_reason(socket_target, frame, code, words):
    closed, messages = _send(socket_target, frame)
    assert closed == code and closed != 1011
    assert messages and messages[-1]["type"] == "error" and words in messages[-1]["payload"]["error"]
    assert messages[-1]["payload"]["close_code"] == code


def test_a_wrong_message_is_answered_and_the_socket_stays_usable(socket_target):
    url, origin, cookie = socket_target

    async def go() -> list[dict]:
        async with websockets.connect(url, origin=origin, additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:  # type: ignore[arg-type]
            await ws.send('{"type": "hello"}')
            first = json.loads(await asyncio.wait_for(ws.recv(), timeout=20))
            await ws.send('{"type": "subscribe", "after": 0}')
            second = json.loads(await asyncio.wait_for(ws.recv(), timeout=20))
            return [first, second]

    first, second = asyncio.run(go())
    assert first["type"] == "error" and "subscribe" in first["payload"]["error"]
    assert second["seq"] == 1  # the job's first event: the socket kept working


def test_a_frame_past_daphnes_own_cap_is_dropped_by_daphne_and_the_socket_server_goes_on(socket_target):
    """daphne refuses messages over 1 MiB itself (the app never sees them); that is no 1011 either."""
    closed, messages = _send(socket_target, '{"pad": "' + "x" * 2_000_000 + '"}')
    assert closed != 1011 and messages == []
    closed, messages = _send(socket_target, "garbage")
    assert closed == CLOSE_INVALID
