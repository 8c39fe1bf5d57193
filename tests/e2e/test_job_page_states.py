"""The job page a user sees at each stage, English and Chinese: plan review, live step cards, done, failed.

With SCREENSHOTS_DIR set, each stage is also saved as a PNG (docs/screenshots/ is made this way).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from research.jobs.models import JobStatus, ResearchJob
from tests.e2e.conftest import api_job, own_stack, shot, sign_in
from tests.support.procs import AsgiServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RAW_EVENT_NAMES = re.compile(r"step\.(activity|started|completed|failed)|\[step-\d+\]|job\.status")


def _language(page, base: str, lang: str) -> None:
    if lang == "en":
        return
    page.goto(base + "/")
    page.select_option("select[name=language]", "zh-hans")
    page.click(".topbar form button[type=submit] >> nth=0")
    page.wait_for_selector("html[lang='zh-hans']")


def _submit(page, base: str, question: str, *, max_steps: int, outputs=("pdf",)) -> int:
    page.goto(base + "/jobs/new/")
    page.fill("textarea[name=question]", question)
    page.select_option("select[name=engine]", "offline")
    page.fill("#id_max_steps", str(max_steps))
    for box in page.query_selector_all("input[name=outputs]"):
        if box.is_checked() != (box.get_attribute("value") in outputs):
            box.click()
    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    return int(page.url.rstrip("/").split("/")[-1])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_plan_review_live_cards_and_done(page, dora, asgi_server, worker, live_settings, lang):
    base = asgi_server.url
    sign_in(page, base)
    _language(page, base, lang)
    question = "How have solar power costs changed?" if lang == "en" else "太阳能发电成本如何变化？"
    job_id = _submit(page, base, question, max_steps=3)
    page.wait_for_selector("#plan-editor", timeout=90_000)
    page.wait_for_selector("#conn.live")
    assert page.locator("#search-warning").count() == 0  # the test search site answers
    shot(page, f"{lang}-1-plan-review")
    page.click("#accept-plan")
    # Live step cards: queries and sources (title + host) appear while the job runs.
    page.wait_for_selector(".step-card .sec-sources li", timeout=90_000)
    shot(page, f"{lang}-2-running")
    page.wait_for_selector("#job[data-status='done']", timeout=120_000)
    page.wait_for_selector("#report")
    page.wait_for_timeout(6_000)  # let the last live refreshes land
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.DONE, job.error
    cards = page.locator(".step-card")
    assert cards.count() == job.steps.count()
    assert page.locator(".step-card.card-done").count() == job.steps.count()
    assert page.locator(".step-card .sec-queries li").count() >= 1
    host = page.locator(".step-card .sec-sources li .host").first.inner_text().strip()
    assert host.startswith("127.0.0.1:")  # sources show where they came from
    assert page.locator(".step-card .sec-finding li").count() >= 1
    # Cards speak in titles, not numbers: the report renumbers its references, so a card's [n] would
    # point at a different source than the report's [n].
    assert not re.search(r"\[\d+\]", page.inner_text("#step-cards"))
    assert not RAW_EVENT_NAMES.search(page.inner_text("#timeline"))
    # Each output is listed once; the PDF is previewed in the page.
    names = page.eval_on_selector_all("#downloads a[download]", "els => els.map(e => e.textContent.trim())")
    assert len(names) == len(set(names)) and "report.pdf" in names and "report.md" in names
    page.wait_for_selector("#pdf-preview img")
    thumb = page.request.get(base + page.get_attribute("#pdf-preview img", "src"))
    assert thumb.ok and thumb.body()[:8] == b"\x89PNG\r\n\x1a\n"
    if lang == "zh":
        assert "研究步骤" in page.inner_text("#step-cards")
    shot(page, f"{lang}-3-done")


@pytest.fixture(scope="module")
def dead_search_stack(django_db_setup, stack_env) -> Iterator[AsgiServer]:
    """A web server and worker whose only search provider refuses connections (own Redis db, own queue)."""
    with own_stack(stack_env, searxng_url="http://127.0.0.1:9", providers="searxng", redis_db=1,
                   name="deadsearch") as server:
        yield server


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_search_is_warned_at_plan_time_and_failure_is_said_once(page, dora, dead_search_stack, lang):
    base = dead_search_stack.url
    sign_in(page, base)
    _language(page, base, lang)
    question = "How cheap is wind power now?" if lang == "en" else "风电现在有多便宜？"
    job_id = _submit(page, base, question, max_steps=3)
    page.wait_for_selector("#plan-editor", timeout=90_000)
    warning = page.wait_for_selector("#search-warning", timeout=30_000).inner_text()
    assert "SearXNG" in warning and ("SEARXNG_URL" in warning)
    # Issue 33: no run that can only fail is offered; the ways forward are (a knowledge base, SEARXNG_URL).
    assert page.is_disabled("#accept-plan") and page.is_visible("#ways-forward #kb-upload-form")
    shot(page, f"{lang}-4-plan-no-search")
    # A run that skips the review still fails with one reason, said once. The form refuses to start one
    # while nothing can be searched (issue 33), so it comes through the API.
    job_id = api_job(dead_search_stack, dora, question, max_steps=3)
    page.goto(base + f"/jobs/{job_id}/")
    page.wait_for_selector("#job[data-status='failed']", timeout=120_000)
    page.wait_for_selector("#job-error .failure-summary")
    page.wait_for_timeout(6_000)
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.FAILED and job.steps.count() >= 2
    summary = page.inner_text("#job-error .failure-summary")
    assert summary.count("SearXNG") == 1  # several steps, one reason, said once
    if lang == "en":
        assert "No web search provider could be reached (SearXNG refused the connection)" in summary
    else:
        assert "无法连接任何网络搜索服务" in summary
    assert "SEARXNG_URL" in page.inner_text("#failure-advice")
    assert not page.is_visible("#job-error details code")  # raw errors stay behind the toggle
    page.click("#job-error details summary")
    assert "Connection refused" in page.inner_text("#job-error details")
    assert page.locator("button.rerender").count() == 0  # no report: nothing to re-render
    assert page.locator(".step-card.card-failed").count() == job.steps.count()
    shot(page, f"{lang}-5-failed-no-search")
