"""This process's Redis clients survive a test pointing them at another Redis and back (tests/support/brokers.py).

A fixture used to close the Celery app's broker pool and point the app elsewhere; kombu's registry kept the
closed pool and handed it out again, so every later module's send failed with "Acquire on closed pool"
(tests/security before tests/conversation). These tests send real messages to two real Redis servers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from research.celery import app
from research.runtime import free_port
from tests.support.brokers import layers_pointed_at, redis_clients_pointed_at, redis_clients_problems
from tests.support.procs import RedisServer

QUEUE = "redis-clients-probe"  # no worker consumes it: the message stays where it was sent


@pytest.fixture
def other_redis() -> Iterator[RedisServer]:
    server = RedisServer(f"redis://127.0.0.1:{free_port()}/0").start()
    yield server
    server.stop()


def _queued(url: str) -> int:
    return int(redis.Redis.from_url(url).llen(QUEUE))


def _probe() -> None:
    app.send_task("tests.redis_clients_probe", queue=QUEUE)


@pytest.fixture
def session_url(redis_server) -> Iterator[str]:
    url = str(app.conf.broker_url)
    redis.Redis.from_url(url).delete(QUEUE)
    yield url
    redis.Redis.from_url(url).delete(QUEUE)


def test_sends_go_to_the_other_redis_inside_the_block_and_back_to_the_configured_one_after(session_url, other_redis):
    _probe()  # the pools for the configured Redis exist before the block (a send of an earlier test)
    assert _queued(session_url) == 1
    layers = layers_pointed_at(other_redis.url)
    with redis_clients_pointed_at(broker_url=other_redis.url, channel_layers_setting=layers):
        _probe()
        assert (_queued(other_redis.url), _queued(session_url)) == (1, 1)
        layer = get_channel_layer()
        assert layer is not None
        async_to_sync(layer.send)("probe.channel", {"type": "probe"})
        assert redis.Redis.from_url(other_redis.url).keys("asgi*")  # the layer wrote to the other Redis
        assert async_to_sync(layer.receive)("probe.channel") == {"type": "probe"}
        assert redis_clients_problems() == []
    _probe()  # was: RuntimeError("Acquire on closed pool")
    assert (_queued(other_redis.url), _queued(session_url)) == (1, 2)
    assert redis_clients_problems() == []
    layer = get_channel_layer()
    assert layer is not None and layer.hosts[0]["address"] == session_url  # type: ignore[attr-defined]


def test_the_module_check_names_a_closed_pool_left_behind(session_url):
    _probe()
    assert redis_clients_problems() == []
    # What the old fixture did on its way out: close the app's pool and forget it, not kombu's registry.
    app.pool.force_close_all()
    app._pool = None
    try:
        assert any("closed pool" in p for p in redis_clients_problems())
        with pytest.raises(RuntimeError, match="Acquire on closed pool"):
            _probe()
    finally:
        with redis_clients_pointed_at():  # drops every pooled client: the next send builds fresh ones
            pass
    assert redis_clients_problems() == []
    _probe()
    assert _queued(session_url) == 2
