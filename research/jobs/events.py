"""The one event writer: store with the next seq in the caller's transaction, publish after commit.

Nothing else in the project calls group_send (docs/architecture.md, "Events").
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from research.jobs.models import JobEvent, ResearchJob

logger = logging.getLogger(__name__)

# Keys whose values never leave the server in an event payload.
_SECRET_KEYS = frozenset({"api_key", "authorization", "password", "secret", "token", "cookie"})


def group_name(job_id: int) -> str:
    return f"job-{job_id}"


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("[redacted]" if k.lower() in _SECRET_KEYS else _scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def event_emit(*, job_id: int, type: str, payload: dict[str, Any] | None = None) -> JobEvent:
    """Write the event with the job's next seq; publish it to `job-<id>` once the transaction commits."""
    with transaction.atomic():
        # The UPDATE takes the job row's write lock, so seqs are gap-free and ordered by commit.
        ResearchJob.objects.filter(pk=job_id).update(event_seq=F("event_seq") + 1)
        seq = ResearchJob.objects.filter(pk=job_id).values_list("event_seq", flat=True).get()
        event = JobEvent.objects.create(job_id=job_id, seq=seq, type=type, payload=_scrub(payload or {}))
        message = event.as_message()
        transaction.on_commit(lambda: event_publish(job_id=job_id, message=message))
    return event


def events_emit(*, job_id: int, events: list[tuple[str, dict[str, Any]]]) -> list[JobEvent]:
    """Write several events of one job at once (consecutive seqs, one row lock, one INSERT), each published
    after commit like event_emit's. For a unit that emits a batch (the scheduler queuing steps): fewer
    statements between the first event and the commit, so the first is not held back by the others."""
    if not events:
        return []
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(event_seq=F("event_seq") + len(events))
        last = ResearchJob.objects.filter(pk=job_id).values_list("event_seq", flat=True).get()
        rows = JobEvent.objects.bulk_create([
            JobEvent(job_id=job_id, seq=last - len(events) + 1 + i, type=type_, payload=_scrub(payload))
            for i, (type_, payload) in enumerate(events)
        ])
        for row in rows:
            message = row.as_message()
            transaction.on_commit(lambda message=message: event_publish(job_id=job_id, message=message))  # type: ignore[misc]
    return rows


_loop_lock = threading.Lock()
_publisher: tuple[asyncio.AbstractEventLoop, asyncio.Queue[tuple[str, dict[str, Any]]], int] | None = None
FLUSH_AT_EXIT_S = 2.0


def _publisher_queue() -> tuple[asyncio.AbstractEventLoop, asyncio.Queue[tuple[str, dict[str, Any]]]]:
    """One long-lived event loop per process with one queue of messages to publish, sent in order by one task.

    The caller hands a message over and goes on: it does not wait for Redis. Waiting made each event of a
    transaction (a scheduler queues several steps at once) wait for the round trips of the ones before it
    plus two thread hand-offs per event, which under load was most of the stream's p99. One sender task
    keeps a process's events in order (the socket would otherwise read the store to fill an apparent gap).
    A prefork worker child gets its own loop on first use (the pid check covers fork).
    """
    global _publisher
    with _loop_lock:
        if _publisher is None or _publisher[2] != os.getpid() or _publisher[0].is_closed():
            loop = asyncio.new_event_loop()
            queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
            threading.Thread(target=loop.run_forever, name="event-publisher", daemon=True).start()
            asyncio.run_coroutine_threadsafe(_send_forever(queue), loop)
            _publisher = (loop, queue, os.getpid())
            atexit.register(_flush, loop, queue)
        return _publisher[0], _publisher[1]


async def _send_forever(queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
    while True:
        group, payload = await queue.get()
        try:
            layer = get_channel_layer()
            if layer is not None:
                await layer.group_send(group, payload)
        except Exception as exc:  # the event is stored; live delivery is an optimisation
            logger.warning("could not publish event %s to %s: %s", payload["event"].get("seq"), group, exc)
        finally:
            queue.task_done()


def _flush(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
    """At exit, give the messages still queued a moment to go out (a CLI command that emits and ends)."""
    if loop.is_closed() or queue.empty():
        return
    try:
        asyncio.run_coroutine_threadsafe(queue.join(), loop).result(timeout=FLUSH_AT_EXIT_S)
    except Exception:  # noqa: S110  (exiting; whatever is left is in the store)
        pass


def event_publish(*, job_id: int, message: dict[str, Any]) -> None:
    """Best effort: a client that misses a live message gets it from the store on its next gap check."""
    layer = get_channel_layer()
    if layer is None:
        return
    group, payload = group_name(job_id), {"type": "job.event", "event": message}
    try:
        if getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None) == os.getpid():
            # Called from a sync view inside the ASGI server: send on the server's own loop.
            async_to_sync(layer.group_send)(group, payload)
        else:
            loop, queue = _publisher_queue()
            loop.call_soon_threadsafe(queue.put_nowait, (group, payload))
    except Exception as exc:  # the event is stored; live delivery is an optimisation
        logger.warning("could not publish event %s of job %s: %s", message.get("seq"), job_id, exc)
