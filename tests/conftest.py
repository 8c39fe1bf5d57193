"""Shared fixtures: alice and bob own things, charlie is the outsider who gets 404."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import translation

# SIGTERM (`timeout`, a cancelled CI job) tears fixtures down like Ctrl-C, so nothing they started is orphaned.
# lanes: every test is marked unit, integration or browser (make test-fast selects `unit`).
pytest_plugins = ["tests.support.sigterm", "tests.support.lanes"]


@pytest.fixture(autouse=True)
def _english_after_each_test():
    """LocaleMiddleware leaves a request's language active in the test thread; reset it so a test that
    browsed in Chinese does not turn later tests' (English) messages into Chinese."""
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate-limit counters are keyed by user id, and ids repeat after each test's database reset: start
    every test with the in-process counters empty, so one test's uses never count against the next."""
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["ratelimit"], LocMemCache):  # never flush a Redis shared with the broker
        caches["ratelimit"].clear()
    yield


@pytest.fixture(scope="module", autouse=True)
def _redis_clients_usable(request):
    """Each module starts and ends with this process's Redis clients (Celery's broker pools, the channel
    layer) usable and pointed where they should be. A fixture that closes a pool kombu still hands out made
    a later module fail with "Acquire on closed pool" (tests/support/brokers.py); this names the cause at
    the module that left it, or at the next one."""
    from tests.support.brokers import redis_clients_problems

    assert not (problems := redis_clients_problems()), f"before {request.module.__name__}: {problems}"
    yield
    assert not (problems := redis_clients_problems()), f"after {request.module.__name__}: {problems}"


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.com", "alice-pass-123")


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user("bob", "bob@example.com", "bob-pass-123")


@pytest.fixture
def charlie(db) -> User:
    return User.objects.create_user("charlie", "charlie@example.com", "charlie-pass-123")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def charlie_client(client, charlie):
    client.force_login(charlie)
    return client


# --- real infrastructure for integration tests -------------------------------------------------------

import os  # noqa: E402
from collections.abc import Iterator  # noqa: E402

from tests.support.procs import AsgiServer, RedisServer, WorkerProcess, base_env  # noqa: E402


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> Iterator[None]:
    """With TEST_DATABASE=postgres, a private PostgreSQL is up before pytest-django creates the test database.

    Under pytest-xdist (make test-fast) each worker's test database carries a suffix (`_gw0`); the processes
    a test starts (manage.py commands, workers) are pointed at that worker's database, not the plain name."""
    from django.conf import settings

    test_name = settings.DATABASES["default"].get("TEST", {}).get("NAME")
    if os.environ.get("TEST_DATABASE", "sqlite") != "postgres":
        if test_name:
            os.environ["TEST_CHILD_DATABASE_URL"] = f"sqlite:///{test_name}"
        yield
        return
    from pathlib import Path

    from tests.support.postgres import PostgresServer

    server = PostgresServer(Path(os.environ["TEST_RUN_DIR"]) / "pg", int(os.environ["TEST_PG_PORT"]))
    try:
        server.start()
        server.wait_ready()
        yield
    finally:
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def _flush_retries_deadlocks() -> Iterator[None]:
    """On PostgreSQL, the TRUNCATE that empties the database after a transactional test can deadlock with a
    query of a worker the test left running (the reaper, a late event); PostgreSQL then aborts one of them.
    Retry the flush: the worker's query finishes and the next TRUNCATE goes through."""
    if os.environ.get("TEST_DATABASE", "sqlite") != "postgres":
        yield
        return
    import time

    from django.core.management.base import CommandError
    from django.db import OperationalError
    from django.test import testcases

    original = testcases.TransactionTestCase._fixture_teardown

    def teardown(self: testcases.TransactionTestCase) -> None:
        for attempt in range(6):
            try:
                original(self)
                return
            except (CommandError, OperationalError) as exc:
                if "deadlock" not in f"{exc} {exc.__cause__}" or attempt == 5:
                    raise
                time.sleep(0.5)

    testcases.TransactionTestCase._fixture_teardown = teardown  # type: ignore[method-assign]
    yield
    testcases.TransactionTestCase._fixture_teardown = original  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def django_db_keepdb(request) -> bool:
    """On PostgreSQL the cluster dies with the session: skip DROP DATABASE, which a straggling child's open
    connection would block."""
    return os.environ.get("TEST_DATABASE", "sqlite") == "postgres" or bool(request.config.getvalue("reuse_db"))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer(os.environ["REDIS_URL"]).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def test_site() -> Iterator[object]:
    from tests.support.site import TestSite

    site = TestSite()
    site.start()
    yield site
    site.stop()


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[object]:
    from tests.support.fake_llm import FakeLLM
    from tests.support.scenario import research_scenario

    server = FakeLLM(research_scenario)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def stack_env(redis_server, test_site, fake_llm) -> dict[str, str]:
    """Environment for child processes: the test DB, the test Redis, the test site and the model double."""
    return base_env(
        SEARXNG_URL=test_site.url,
        SEARCH_PROVIDERS="searxng,knowledge",
        LLM_BASE_URL=fake_llm.base_url,
        LLM_MODEL="test-model",
        LLM_PROFILE="qwen3",
        LLM_CONTEXT_WINDOW="32768",
    )


@pytest.fixture(scope="session")
def worker(django_db_setup, django_db_blocker, stack_env) -> Iterator[WorkerProcess]:
    """One real Celery worker process (with beat for the reaper), shared by the session."""
    proc = WorkerProcess(stack_env, concurrency=4, beat=True, name="session").start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, stack_env) -> Iterator[AsgiServer]:
    server = AsgiServer(stack_env).start()
    yield server
    server.stop()


@pytest.fixture
def live_settings(settings, test_site, fake_llm):
    """Point this process's settings at the same test services the children use."""
    settings.SEARXNG_URL = test_site.url
    settings.LLM_BASE_URL = fake_llm.base_url
    return settings


@pytest.fixture
def alice_objects(alice, monkeypatch) -> dict[str, object]:
    """One of each owned thing (job, artifact, knowledge base, document), keyed by URL parameter name."""
    from research.jobs import dispatch, services
    from research.jobs.models import Artifact
    from research.knowledge import services as kb_services

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="What is the state of heat pumps?", options={})
    Artifact.objects.create(job=job, kind="md", name="report.md", file=f"jobs/{job.pk}/report.md", size=1,
                            sha256="0" * 64)
    collection = kb_services.collection_create(owner=alice, name="notes")
    document = kb_services.document_add(collection=collection, filename="a.txt",
                                        data=b"Heat pumps move heat instead of making it.")
    return {"job_id": job.pk, "number": 1, "name": "report.md", "collection_id": collection.pk,
            "document_id": document.pk, "pk": job.pk}
