"""This test process's clients of Redis (the Celery app's broker pools, the Channels layer): repoint and check.

Both clients cache connections process-wide, and not only where one would look. Celery's `app.pool` and
`app.amqp.producer_pool` are entries of kombu's global registries (`kombu.pools.connections` and
`.producers`), keyed by the broker URL: closing `app._pool` and setting it to None leaves the closed pool
in the registry, and the next send to that URL gets it back and fails with "Acquire on closed pool".
That is what a fixture that pointed the app at another Redis and back did to every later module. The
channel layer instances are cached per alias by `channels.layers.channel_layers`, built from the
settings of the moment.

So a test that needs other Redis endpoints goes through `redis_clients_pointed_at`, which empties those
caches on the way in and on the way out; and `redis_clients_problems` (checked at the start of every test
module, tests/conftest.py) names any cache an earlier module left unusable or pointed elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from channels.layers import channel_layers
from django.conf import settings
from kombu import pools

from research.celery import app


def _reset_clients() -> None:
    """Close and forget every pooled broker connection and producer, and every built channel layer: the
    next send builds them again from the current configuration."""
    pools.reset()  # closes the registries' pools and clears the registries (not only app._pool)
    app._pool = None
    amqp = app.__dict__.get("amqp")  # a cached_property: only if it was built
    if amqp is not None:
        amqp._producer_pool = None
    channel_layers.backends.clear()


def layers_pointed_at(url: str) -> dict[str, Any]:
    """settings.CHANNEL_LAYERS with the default layer's Redis address replaced by `url` (options kept)."""
    default = settings.CHANNEL_LAYERS["default"]
    hosts = [{**host, "address": url} if isinstance(host, dict) else url for host in default["CONFIG"]["hosts"]]
    return {**settings.CHANNEL_LAYERS, "default": {**default, "CONFIG": {**default["CONFIG"], "hosts": hosts}}}


_pointed: list[str] = []  # the broker URLs of the blocks now open, innermost last


@contextmanager
def redis_clients_pointed_at(*, broker_url: str | None = None,
                             channel_layers_setting: dict[str, Any] | None = None) -> Iterator[None]:
    """Point the Celery app's broker and/or the channel layers elsewhere for the block, then back; the
    pooled clients are dropped both ways, so nothing closed or pointed elsewhere outlives the block."""
    old_broker, old_layers = app.conf.broker_url, settings.CHANNEL_LAYERS
    _reset_clients()
    app.conf.broker_url = broker_url or old_broker
    settings.CHANNEL_LAYERS = channel_layers_setting or old_layers
    _pointed.append(app.conf.broker_url)
    try:
        yield
    finally:
        _pointed.pop()
        _reset_clients()
        app.conf.broker_url = old_broker
        settings.CHANNEL_LAYERS = old_layers


def redis_clients_problems() -> list[str]:
    """What would make this process's next send fail or go astray: a closed pool that kombu still hands
    out, or a client pointed away from where it should be (settings, or the open block's URL)."""
    problems = []
    expected_broker = _pointed[-1] if _pointed else settings.CELERY_BROKER_URL
    if app.conf.broker_url != expected_broker:
        problems.append("the Celery app's broker URL was changed without redis_clients_pointed_at")
    for kind, group in (("connection", pools.connections), ("producer", pools.producers)):
        for pool in list(group.values()):
            if getattr(pool, "_closed", False) or getattr(getattr(pool, "connections", None), "_closed", False):
                problems.append(f"kombu's {kind} pool registry holds a closed pool (\"Acquire on closed pool\")")
    if app._pool is not None and getattr(app._pool, "_closed", False):
        problems.append("the Celery app's broker pool is closed")
    layer = channel_layers.backends.get("default")
    if layer is not None:
        expected = channel_layers.make_backend("default")  # builds the object only; connects nowhere
        if type(layer) is not type(expected) or getattr(layer, "hosts", None) != getattr(expected, "hosts", None):
            problems.append("the cached channel layer was built from other settings than settings.CHANNEL_LAYERS")
    return problems
