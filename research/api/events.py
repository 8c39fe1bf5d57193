"""Server-sent events for one job: replay after a seq from the store, then live from the channel layer.

The same guarantees as the job WebSocket: we join the job's group before replaying, so nothing
published meanwhile is missed; seqs at or below the last one sent are dropped; a gap is filled from
the store. The stream ends once the job is terminal and every stored event has been sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from research.jobs import selectors
from research.jobs.events import group_name
from research.jobs.models import TERMINAL_STATUSES, ResearchJob

HEARTBEAT_S = 15.0


def _frame(message: dict[str, Any]) -> str:
    return f"id: {message['seq']}\nevent: {message['type']}\ndata: {json.dumps(message, ensure_ascii=False)}\n\n"


def _job_state(job_id: int) -> tuple[str, int]:
    status, seq = ResearchJob.objects.filter(pk=job_id).values_list("status", "event_seq").get()
    return str(status), int(seq)


async def job_event_stream(*, job_id: int, after: int) -> AsyncIterator[str]:
    layer = get_channel_layer()
    assert layer is not None
    channel = await layer.new_channel()
    await layer.group_add(group_name(job_id), channel)
    last = after
    try:
        yield "retry: 3000\n\n"
        while True:
            # Replay (or fill a gap) from the store.
            while True:
                rows = await database_sync_to_async(selectors.job_events_after)(job_id=job_id, after=last)
                for row in rows:
                    if row["seq"] == last + 1:
                        yield _frame(row)
                        last = row["seq"]
                if len(rows) < 5000:
                    break
            status, stored = await database_sync_to_async(_job_state)(job_id)
            if status in TERMINAL_STATUSES and last >= stored:
                return
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=HEARTBEAT_S)
            except TimeoutError:
                yield ": keep-alive\n\n"  # and the loop re-reads the store, healing a lost publish
                continue
            event = message.get("event") or {}
            seq = int(event.get("seq") or 0)
            if seq == last + 1:
                yield _frame(event)
                last = seq
            # seq > last + 1: the replay at the top of the loop reads the gap and this event in order.
    finally:
        await layer.group_discard(group_name(job_id), channel)
