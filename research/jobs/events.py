"""The one event writer: store with the next seq in the caller's transaction, publish after commit.

Nothing else in the project calls group_send (docs/architecture.md, "Events").
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.db.models import F

from research.jobs.event_types import UndeclaredEvent, event_problem
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


def event_check(type_: str, payload: dict[str, Any]) -> None:
    """The event as declared in event_types.py? Refused with EVENTS_STRICT (the tests), else logged: a live
    job never loses an event, or fails, over a declaration."""
    problem = event_problem(type_, payload)
    if not problem:
        return
    if settings.EVENTS_STRICT:
        raise UndeclaredEvent(problem)
    logger.error("%s", problem)


def event_emit(*, job_id: int, type: str, payload: dict[str, Any] | None = None) -> JobEvent:
    """Write the event with the job's next seq; publish it to `job-<id>` once the transaction commits."""
    event_check(type, payload or {})
    with transaction.atomic():
        # The UPDATE takes the job row's write lock, so seqs are gap-free and ordered by commit.
        ResearchJob.objects.filter(pk=job_id).update(event_seq=F("event_seq") + 1)
        seq = ResearchJob.objects.filter(pk=job_id).values_list("event_seq", flat=True).get()
        event = JobEvent.objects.create(job_id=job_id, seq=seq, type=type, payload=_scrub(payload or {}))
        message = event.as_message()
        transaction.on_commit(lambda: event_publish(job_id=job_id, message=message))
    return event


def events_emit(*, job_id: int, events: list[tuple[str, dict[str, Any]]]) -> list[JobEvent]:
    """Write several events of one job at once (consecutive seqs, one row lock, one INSERT) and publish them
    together after commit, in order, in one hand-off to the publisher. For a unit that emits a batch (the
    scheduler queuing steps): the first event is not held back by the others' writes and round trips."""
    if not events:
        return []
    for type_, payload in events:
        event_check(type_, payload)
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(event_seq=F("event_seq") + len(events))
        last = ResearchJob.objects.filter(pk=job_id).values_list("event_seq", flat=True).get()
        rows = JobEvent.objects.bulk_create([
            JobEvent(job_id=job_id, seq=last - len(events) + 1 + i, type=type_, payload=_scrub(payload))
            for i, (type_, payload) in enumerate(events)
        ])
        messages = [row.as_message() for row in rows]
        transaction.on_commit(lambda: events_publish(job_id=job_id, messages=messages))
    return rows


_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0


def _publisher_loop() -> asyncio.AbstractEventLoop:
    """One long-lived event loop per process for publishing, so Redis connections are reused.

    async_to_sync would start a loop, a thread and a Redis connection for every event; a prefork
    worker child gets its own loop on first use (the pid check covers fork).
    """
    global _loop, _loop_pid
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="event-publisher", daemon=True).start()
            _loop, _loop_pid = loop, os.getpid()
        return _loop


def event_publish(*, job_id: int, message: dict[str, Any]) -> None:
    """Best effort: a client that misses a live message gets it from the store on its next gap check."""
    events_publish(job_id=job_id, messages=[message])


def events_publish(*, job_id: int, messages: list[dict[str, Any]]) -> None:
    """Publish messages of one job in order, in one hand-off (best effort, like event_publish).

    The caller waits for the sends: while it waits it holds no GIL, so the publisher thread runs at once
    (handing off without waiting measured slower: the thread then queued for the GIL behind the unit's work).
    """
    layer = get_channel_layer()
    if layer is None or not messages:
        return
    group = group_name(job_id)

    async def send_all() -> None:
        for message in messages:
            await layer.group_send(group, {"type": "job.event", "event": message})

    try:
        if getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None) == os.getpid():
            # Called from a sync view inside the ASGI server: send on the server's own loop.
            async_to_sync(send_all)()
        else:
            asyncio.run_coroutine_threadsafe(send_all(), _publisher_loop()).result(timeout=5)
    except Exception as exc:  # the events are stored; live delivery is an optimisation
        logger.warning("could not publish events %s of job %s: %s", [m.get("seq") for m in messages], job_id, exc)
