"""The job WebSocket: owner only, replay after a seq, then live, with no duplicates and no gaps."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from research.jobs import selectors
from research.jobs.events import group_name

CLOSE_FORBIDDEN = 4403
# A frame the socket cannot use closes it cleanly with one of these codes (daphne sends only 1000 or
# 3000-4999) after an {"type": "error"} message that says why (daphne passes no close reason on), never
# with 1011 from an exception.
CLOSE_INVALID = 4400  # not JSON, or JSON nested too deep to read
CLOSE_TOO_BIG = 4413
CLOSE_UNSUPPORTED = 4415  # a binary frame
CLOSE_BAD_REQUEST = 4422  # JSON, but a subscribe the socket cannot honour (e.g. "after": 1e309)
MAX_FRAME_CHARS = 4096  # a subscribe message is ~40 characters
MAX_SEQ = 2**63 - 1  # what the database's seq column holds


class JobEventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.job_id = int(self.scope["url_route"]["kwargs"]["job_id"])
        user = self.scope.get("user")
        user_id = getattr(user, "pk", None) if user is not None and user.is_authenticated else None
        allowed = await database_sync_to_async(selectors.job_user_can_watch)(user_id=user_id, job_id=self.job_id)
        if not allowed:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.last_seq: int | None = None  # None until the client subscribes
        self.lock = asyncio.Lock()
        await self.channel_layer.group_add(group_name(self.job_id), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "lock"):
            await self.channel_layer.group_discard(group_name(self.job_id), self.channel_name)

    async def _refuse(self, code: int, reason: str) -> None:
        await self.send_json({"type": "error", "payload": {"error": reason, "close_code": code}})
        await self.close(code=code, reason=reason)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        if text_data is None:
            await self._refuse(CLOSE_UNSUPPORTED, "binary frames are not understood; send JSON text")
            return
        if len(text_data) > MAX_FRAME_CHARS:
            await self._refuse(CLOSE_TOO_BIG, f"frame too large (more than {MAX_FRAME_CHARS} characters)")
            return
        try:
            content = json.loads(text_data)
        except (ValueError, RecursionError):
            await self._refuse(CLOSE_INVALID, "frame is not valid JSON")
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "subscribe":
            hint = 'send {"type": "subscribe", "after": N}'
            await self.send_json({"type": "error", "payload": {"error": hint}})
            return
        raw = content.get("after")
        try:
            after = max(0, int(raw or 0))
        except (TypeError, ValueError):
            after = 0
        except OverflowError:  # after: 1e309 (infinity)
            after = -1
        if not 0 <= after <= MAX_SEQ:
            await self._refuse(CLOSE_BAD_REQUEST, f'"after" must be a whole number from 0 to {MAX_SEQ}')
            return
        async with self.lock:
            # We joined the group before replaying, so nothing published later is missed, and every
            # event published earlier was committed first, so the replay holds it. Anything at or
            # below last_seq is dropped as a duplicate.
            if self.last_seq is not None:
                # A periodic re-subscribe: re-join too, which heals a group membership lost when Redis
                # restarted without its data (the first subscribe follows the join in connect()).
                await self.channel_layer.group_add(group_name(self.job_id), self.channel_name)
            self.last_seq = after
            await self._catch_up(upto=None)

    async def job_event(self, event: dict[str, Any]) -> None:
        message = event["event"]
        async with self.lock:
            if self.last_seq is None:  # not subscribed yet: the replay will include it
                return
            await self._deliver(message)

    async def _deliver(self, message: dict[str, Any]) -> None:
        assert self.last_seq is not None
        seq = int(message["seq"])
        if seq <= self.last_seq:
            return
        if seq > self.last_seq + 1:  # published out of order: the gap is already committed, read it
            await self._catch_up(upto=seq - 1)
        if seq == self.last_seq + 1:
            await self.send_json(message)
            self.last_seq = seq

    async def _catch_up(self, *, upto: int | None) -> None:
        assert self.last_seq is not None
        while True:
            if upto is None:
                rows = await database_sync_to_async(selectors.job_events_after)(job_id=self.job_id,
                                                                                 after=self.last_seq)
            else:
                rows = await database_sync_to_async(selectors.job_events_between)(
                    job_id=self.job_id, after=self.last_seq, upto=upto)
            for row in rows:
                if row["seq"] == self.last_seq + 1:
                    await self.send_json(row)
                    self.last_seq = row["seq"]
            if upto is not None or len(rows) < 5000:
                return
