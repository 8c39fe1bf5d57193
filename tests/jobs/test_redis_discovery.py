"""The CLI and `make run` find this checkout's embedded Redis, never another program's on the same port."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from research import runtime

pytestmark = pytest.mark.integration  # every test starts a real Redis server

@pytest.fixture
def foreign_redis(tmp_path) -> Iterator[int]:
    """Another app's Redis, listening where ours would like to."""
    port = runtime.free_port()
    proc = runtime.start_embedded_redis(tmp_path, port=port, data_dir=tmp_path / "foreign")
    yield port
    proc.terminate()
    proc.wait(timeout=10)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=10)


def test_a_foreign_redis_on_the_preferred_port_is_not_taken_for_ours(tmp_path, foreign_redis):
    base = tmp_path / "app"
    base.mkdir()
    url = runtime.default_redis_url(base, port=foreign_redis)
    assert runtime.url_port(url) != foreign_redis
    assert not runtime.redis_is_ours(base, f"redis://127.0.0.1:{foreign_redis}/0")


def test_the_started_redis_is_found_again_by_its_token(tmp_path, foreign_redis):
    base = tmp_path / "app"
    base.mkdir()
    url = runtime.default_redis_url(base, port=foreign_redis)
    proc = runtime.start_embedded_redis(base, port=runtime.url_port(url))
    try:
        assert runtime.redis_is_ours(base, url)
        assert runtime.default_redis_url(base, port=foreign_redis) == url  # a later command finds it
        record = json.loads((base / ".run" / "redis.json").read_text())
        assert record["url"] == url and len(record["token"]) == 32
        # A record that points at the foreign server (or carries a wrong token) is not trusted.
        forged = base / ".run" / "redis.json"
        forged.write_text(json.dumps({**record, "url": f"redis://127.0.0.1:{foreign_redis}/0"}))
        assert not runtime.redis_is_ours(base)
        forged.write_text(json.dumps({**record, "token": "0" * 32}))
        assert not runtime.redis_is_ours(base)
        assert runtime.default_redis_url(base, port=foreign_redis) != url  # ours is unproven: pick a free port
    finally:
        stop(proc)


def test_a_dead_registered_redis_is_not_ours(tmp_path):
    base: Path = tmp_path / "app"
    base.mkdir()
    port = runtime.free_port()
    proc = runtime.start_embedded_redis(base, port=port)
    stop(proc)
    assert not runtime.redis_is_ours(base)
    assert runtime.default_redis_url(base, port=port) == f"redis://:{runtime.redis_password(base)}@127.0.0.1:{port}/0"
