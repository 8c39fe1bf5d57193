"""The job socket: replay after a seq, live after that, outsiders and bad origins refused."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from research.asgi import application
from research.jobs import dispatch, services
from research.jobs.events import event_emit
from research.jobs.models import ResearchJob
from research.jobs.web.consumers import JobEventsConsumer
from tests.support.brokers import redis_clients_pointed_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def memory_layer(monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    with redis_clients_pointed_at(channel_layers_setting={
            "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}):
        yield


def _communicator(job_id: int, user: User | None, origin: bytes = b"http://127.0.0.1") -> WebsocketCommunicator:
    from django.urls import path

    app = URLRouter([path("ws/jobs/<int:job_id>/", JobEventsConsumer.as_asgi())])
    comm = WebsocketCommunicator(app, f"/ws/jobs/{job_id}/", headers=[(b"origin", origin)])
    comm.scope["user"] = user
    return comm


@pytest.fixture(autouse=True)
def _any_payload(settings):
    """These tests are about delivery (seq, replay, live), with payloads of their own: not checked against
    research/jobs/event_types.py."""
    settings.EVENTS_STRICT = False


@database_sync_to_async
def _job_with_events(user: User, n: int) -> ResearchJob:
    job = services.job_create(user=user, question="q?", options={})
    for i in range(n):
        event_emit(job_id=job.pk, type="step.activity", payload={"i": i})
    return job


async def test_replays_after_seq_then_streams_live_without_duplicates(alice):
    job = await _job_with_events(alice, 4)  # seq 1 (queued) + 4 → 5 events
    comm = _communicator(job.pk, alice)
    connected, _ = await comm.connect()
    assert connected
    await comm.send_json_to({"type": "subscribe", "after": 2})
    replayed = [await comm.receive_json_from() for _ in range(3)]
    assert [m["seq"] for m in replayed] == [3, 4, 5]
    assert set(replayed[0]) == {"seq", "type", "payload", "ts"}
    await database_sync_to_async(event_emit)(job_id=job.pk, type="step.activity", payload={"live": True})
    live = await comm.receive_json_from(timeout=3)
    assert live["seq"] == 6 and live["payload"] == {"live": True}
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_gap_in_live_messages_is_filled_from_the_store(alice):
    job = await _job_with_events(alice, 0)
    comm = _communicator(job.pk, alice)
    await comm.connect()
    await comm.send_json_to({"type": "subscribe", "after": 0})
    assert (await comm.receive_json_from())["seq"] == 1
    # Store two events but deliver only the second live: the consumer must read the first from the DB.
    from research.jobs.models import JobEvent

    @database_sync_to_async
    def store_two() -> dict:
        from django.db.models import F

        for seq in (2, 3):
            ResearchJob.objects.filter(pk=job.pk).update(event_seq=F("event_seq") + 1)
            ev = JobEvent.objects.create(job=job, seq=seq, type="t", payload={"n": seq})
        return ev.as_message()

    third = await store_two()
    from channels.layers import get_channel_layer

    await get_channel_layer().group_send(f"job-{job.pk}", {"type": "job.event", "event": third})
    got = [await comm.receive_json_from(timeout=3) for _ in range(2)]
    assert [m["seq"] for m in got] == [2, 3]
    await comm.disconnect()


async def test_outsider_is_refused(alice, charlie):
    job = await _job_with_events(alice, 1)
    comm = _communicator(job.pk, charlie)
    connected, code = await comm.connect()
    assert not connected and code == 4403


async def test_anonymous_is_refused(alice):
    from django.contrib.auth.models import AnonymousUser

    job = await _job_with_events(alice, 1)
    connected, _ = await _communicator(job.pk, AnonymousUser()).connect()
    assert not connected


async def test_bad_origin_is_refused(alice):
    job = await _job_with_events(alice, 1)
    comm = WebsocketCommunicator(application, f"/ws/jobs/{job.pk}/", headers=[(b"origin", b"http://evil.example")])
    connected, _ = await comm.connect()
    assert not connected


async def test_a_batch_of_events_gets_consecutive_seqs_and_streams_live_in_order(alice):
    from research.jobs.events import events_emit

    job = await _job_with_events(alice, 1)  # seq 1 (queued) + 1
    comm = _communicator(job.pk, alice)
    await comm.connect()
    await comm.send_json_to({"type": "subscribe", "after": 2})
    batch = [("step.queued", {"step": s}) for s in ("s1", "s2", "s3")]
    stored = await database_sync_to_async(events_emit)(job_id=job.pk, events=batch)
    assert [e.seq for e in stored] == [3, 4, 5]
    got = [await comm.receive_json_from(timeout=3) for _ in range(3)]
    assert [(m["seq"], m["payload"]["step"]) for m in got] == [(3, "s1"), (4, "s2"), (5, "s3")]
    assert all(isinstance(m["ts"], float) for m in got)
    assert await comm.receive_nothing(timeout=0.3)
    job_row = await database_sync_to_async(ResearchJob.objects.get)(pk=job.pk)
    assert job_row.event_seq == 5
    await comm.disconnect()
