"""Local users read nothing private: the SQLite database (sessions, token hashes) and .run/ (the embedded
Redis's password, data and identity) are the owner's only, and the embedded Redis needs its password
(issue 25: db.sqlite3 was created 0644 and the embedded Redis had no password)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from research import runtime

ROOT = Path(__file__).resolve().parents[2]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_sqlite_database_and_its_wal_are_created_0600(tmp_path):
    """The app's own settings and backend, in a process of its own, writing a fresh database file."""
    db = tmp_path / "db.sqlite3"
    code = ("import django; django.setup(); from django.db import connection; c = connection.cursor(); "
            "c.execute('CREATE TABLE t (x TEXT)'); c.execute(\"INSERT INTO t VALUES ('secret')\"); "
            f"import os; print(sorted(os.listdir({str(tmp_path)!r})))")
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "TEST_DB_NAME")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         env={**env, "DJANGO_SETTINGS_MODULE": "research.settings", "DATABASE_URL": f"sqlite:///{db}"})
    assert out.returncode == 0, out.stderr
    assert "'db.sqlite3-wal'" in out.stdout  # WAL mode: the -wal file existed while it wrote
    files = [p for p in tmp_path.iterdir() if p.name.startswith("db.sqlite3")]
    assert files and all(_mode(p) == 0o600 for p in files), {p.name: oct(_mode(p)) for p in files}


def test_an_existing_loose_database_is_tightened(tmp_path):
    db = tmp_path / "db.sqlite3"
    db.write_bytes(b"")
    db.chmod(0o644)
    runtime.private_file(db)
    assert _mode(db) == 0o600


def test_the_settings_use_the_private_backend_for_sqlite():
    from django.conf import settings
    from django.db import connection

    if connection.vendor == "sqlite":  # TEST_DATABASE=postgres runs the suite on PostgreSQL
        assert settings.DATABASES["default"]["ENGINE"] == "research.sqlite3"


@pytest.fixture
def app_redis(tmp_path):
    base = tmp_path / "app"
    base.mkdir()
    url = runtime.default_redis_url(base, port=runtime.free_port())
    proc = runtime.start_embedded_redis(base, port=runtime.url_port(url))
    yield base, url, proc
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.integration
def test_run_dir_is_0700_and_its_files_0600(app_redis):
    base, _url, _proc = app_redis
    run = base / ".run"
    assert _mode(run) == 0o700
    for name in ("redis-password", "redis.conf", "redis.json"):
        assert _mode(run / name) == 0o600, name
    data = [p for p in run.iterdir() if p.name.startswith("redis-") and p.is_dir()]
    assert data and all(_mode(d) == 0o700 for d in data)


@pytest.mark.integration
def test_the_embedded_redis_needs_its_random_password(app_redis):
    base, url, proc = app_redis
    password = (base / ".run" / "redis-password").read_text().strip()
    assert len(password) >= 40 and f":{password}@" in url
    assert json.loads((base / ".run" / "redis.json").read_text())["url"] == url
    port = runtime.url_port(url)
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis.from_url(f"redis://127.0.0.1:{port}/0").get("x")
    assert redis.Redis.from_url(url).ping()
    assert runtime.redis_is_ours(base, url)
    # Not on the command line, which every local user can read.
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    assert password.encode() not in cmdline
    # The same password again for the next start; log lines never show it.
    assert runtime.redis_password(base) == password
    assert password not in runtime.redacted_url(url) and runtime.redacted_url(url).endswith(f"@127.0.0.1:{port}/0")


def test_every_client_uses_the_password(monkeypatch, tmp_path):
    """Broker, channel layer and rate-limit cache all read REDIS_URL, which carries the password."""
    code = ("from django.conf import settings as s; import json; print(json.dumps([s.REDIS_URL, "
            "s.CELERY_BROKER_URL, s.CHANNEL_LAYERS['default']['CONFIG']['hosts'][0]['address'], "
            "s.CACHES['ratelimit']['LOCATION']]))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "RATELIMIT_CACHE_URL", "DJANGO_SETTINGS_MODULE")}
    out = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], capture_output=True,
                         text=True, timeout=60, cwd=ROOT,
                         env={**env, "DJANGO_SETTINGS_MODULE": "research.settings"})
    urls = json.loads(out.stdout.strip().splitlines()[-1])
    password = runtime.redis_password(ROOT)
    assert all(f":{password}@" in u for u in urls), out.stderr
