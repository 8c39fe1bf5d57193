"""Imported by tests/settings.py before Django: test-wide environment shared with the processes tests start."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Processes a test run starts (and their forks) share its folder; the run that made it removes it at the end,
# unless KEEP_TEST_RUN_DIR=1 (logs, screenshots, the database stay for a look).
_inherited = os.environ.get("TEST_RUN_DIR", "")
if _inherited and Path(_inherited).is_dir():
    _RUN = Path(_inherited)
else:
    _RUN = Path(tempfile.mkdtemp(prefix="research-tests-"))
    os.environ["TEST_RUN_DIR"] = str(_RUN)
    if os.environ.get("KEEP_TEST_RUN_DIR") != "1":
        _creator = os.getpid()
        atexit.register(lambda: os.getpid() == _creator and shutil.rmtree(_RUN, ignore_errors=True))
os.environ.setdefault("OUTPUTS_DIR", str(_RUN / "outputs"))
os.environ["STORAGE_BACKEND"] = "filesystem"  # tests that need S3 start their own server (tests/scale)
os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production-0123456789abcdef")
os.environ.setdefault("FETCH_ALLOW_LOOPBACK", "1")
os.environ.setdefault("TTS_BACKEND", "espeak")
os.environ.setdefault("DEFAULT_ENGINE", "offline")
os.environ.setdefault("SEARCH_PROVIDERS", "searxng,knowledge")
os.environ.setdefault("SEARXNG_URL", "http://127.0.0.1:9/")  # closed port unless a test site is started
os.environ.setdefault("LLM_BASE_URL", "http://127.0.0.1:9/v1")
os.environ.setdefault("STEP_LEASE_S", "4")
os.environ.setdefault("REAPER_INTERVAL_S", "1")
os.environ.setdefault("JOB_CREATE_RATE", "1000/h")
# Fair-share caps off unless a test turns them on (tests/jobs/test_fairness.py): many tests run several
# jobs of one user at once.
os.environ.setdefault("FAIR_USER_RUNNING_JOBS", "0")
os.environ.setdefault("FAIR_USER_RUNNING_UNITS", "0")
os.environ.setdefault("KB_USER_INDEXING_AT_ONCE", "0")
# Rate limits count in each process's memory unless a test asks for Redis (tests/security/test_ratelimit.py).
os.environ.setdefault("RATELIMIT_CACHE_URL", "locmem://")
for _rate in ("RERENDER_RATE", "REPORT_EDIT_RATE", "KB_UPLOAD_RATE", "LOGIN_RATE", "SIGNUP_RATE",
              "LOGIN_ADDRESS_RATE", "LOGIN_NAME_RATE", "FOLLOWUP_RATE", "WRITE_RATE",
              "PREVIEW_RATE"):
    os.environ.setdefault(_rate, "1000/m")
os.environ.setdefault("LLM_MAX_RETRIES", "2")
# An event emitted with a type or payload research/jobs/event_types.py does not declare fails the test.
os.environ.setdefault("EVENTS_STRICT", "1")

def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A Redis server for the tests is started on this port by the `redis_server` fixture.
os.environ["REDIS_URL"] = f"redis://127.0.0.1:{_free_port()}/0"

# The database: SQLite (a file the test processes share) unless TEST_DATABASE=postgres, which `make test`
# sets for the suites that run real workers. Then the `django_db_modify_db_settings` fixture starts a
# private PostgreSQL on this port with its data under the run dir (tests/support/postgres.py).
if os.environ.get("TEST_DATABASE", "sqlite") == "postgres":
    _PG_PORT = _free_port()
    os.environ["TEST_PG_PORT"] = str(_PG_PORT)
    os.environ["DATABASE_URL"] = f"postgres://research@127.0.0.1:{_PG_PORT}/research"
    os.environ["TEST_DB_NAME"] = "research_test"
    os.environ["TEST_CHILD_DATABASE_URL"] = f"postgres://research@127.0.0.1:{_PG_PORT}/research_test"
else:
    os.environ["TEST_DB_NAME"] = str(_RUN / "test.sqlite3")
    os.environ["TEST_CHILD_DATABASE_URL"] = f"sqlite:///{_RUN / 'test.sqlite3'}"
