"""Clarify → answer → plan in the browser (JS on): the questions appear live, the answers shape the plan."""

from __future__ import annotations

import re

import pytest

from research.jobs.models import JobStatus, ResearchJob
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_clarify_answer_then_plan(page, dora, asgi_server, worker, live_settings):
    base = asgi_server.url
    sign_in(page, base)
    page.goto(base + "/jobs/new/")
    assert page.is_checked("#id_clarify")  # on by default
    page.fill("#id_question", "Tell me about batteries")
    page.select_option("#id_engine", "llm")
    page.fill("#id_max_steps", "3")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    job_id = int(page.url.rstrip("/").split("/")[-1])
    # The questions arrive live (no reload): the panel re-renders on the status event.
    page.wait_for_selector("#clarify-form", timeout=60_000)
    page.wait_for_selector("#job[data-status='awaiting_clarification']")
    labels = page.locator("#clarify-form label").all_inner_texts()
    assert 1 <= len(labels) <= 3 and labels[0].endswith("?")
    page.screenshot(path=str(_shot("clarify-questions")), full_page=True)
    page.fill("#clarify-answer-0", "Germany")
    page.click("#clarify-submit")
    # Then the plan, built around the answer, waits for review.
    page.wait_for_selector("#plan-editor", timeout=60_000)
    titles = page.eval_on_selector_all("#plan-editor input[name$='-title']", "els => els.map(e => e.value)")
    assert any("Germany" in t for t in titles), titles
    assert page.locator("#clarify-form").count() == 0
    page.screenshot(path=str(_shot("clarify-plan")), full_page=True)
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.AWAITING_REVIEW
    assert job.options["clarifications"][0]["answer"] == "Germany"


def _shot(name: str):
    import os
    from pathlib import Path

    folder = Path(os.environ.get("TEST_RUN_DIR", "/tmp")) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"
