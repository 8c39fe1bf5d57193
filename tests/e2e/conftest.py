"""Browser tests: Debian's chromium driven by Playwright against daphne + a real worker."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User

from tests.support.procs import AsgiServer, WorkerProcess

# Playwright's sync API runs an event loop in this thread; the ORM calls here are plain blocking ones.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


# Module scope: Playwright's loop must be gone before other tests use async_to_sync in this thread.
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("Debian's chromium is required: apt-get install chromium (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture
def dora(transactional_db) -> User:
    # The server process verifies with the production hashers, so use one of those.
    return User.objects.create(username="dora", password=make_password("dora-pass-123", hasher="pbkdf2_sha256"))


def sign_in(page, base_url: str, username: str = "dora", password: str = "dora-pass-123") -> None:
    page.goto(base_url + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit].primary")
    page.wait_for_url(base_url + "/")


def submit_offline_job(page, base_url: str, question: str, *, max_steps: int = 2) -> int:
    """Fill the new-job form for a small auto-accepted offline job with no extra outputs; returns its id."""
    page.goto(base_url + "/jobs/new/")
    page.fill("textarea[name=question]", question)
    page.select_option("select[name=engine]", "offline")
    page.fill("#id_max_steps", str(max_steps))
    for box in page.query_selector_all("input[name=outputs]"):
        if box.is_checked():
            box.click()
    page.check("#id_auto_accept")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    return int(page.url.rstrip("/").split("/")[-1])


def shot(page, name: str) -> None:
    """With SCREENSHOTS_DIR set, save the page as NAME.png there (docs/screenshots/ is made this way)."""
    out = os.environ.get("SCREENSHOTS_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / f"{name}.png"), full_page=True)


def api_job(server, user, question: str, **options) -> int:
    """A job through the server's API (its worker runs it): the new-job form refuses an auto-accepted job
    while nothing can be searched, the API takes it and lets it fail."""
    from research.api import services as token_services

    _token, secret = token_services.token_create(user=user, name=f"t{time.monotonic_ns()}")
    created = httpx.post(server.url + "/api/v1/jobs", headers={"Authorization": f"Bearer {secret}"}, timeout=30,
                         json={"question": question, "engine": "offline", "auto_accept": True, "outputs": ["md"],
                               **options})
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


@contextmanager
def own_stack(stack_env: dict[str, str], *, searxng_url: str, providers: str, redis_db: int,
              name: str) -> Iterator[AsgiServer]:
    """A web server and worker of a test module's own: its search (a site of its own, or a closed port),
    its Redis database and queue, so the session's test site and its rankings stay as other tests expect."""
    env = dict(stack_env, SEARXNG_URL=searxng_url, SEARCH_PROVIDERS=providers,
               REDIS_URL=stack_env["REDIS_URL"].rsplit("/", 1)[0] + f"/{redis_db}")
    server = AsgiServer(env).start()
    work = WorkerProcess(env, concurrency=2, name=name).start()
    try:
        yield server
    finally:
        work.stop()
        server.stop()
