"""A heavy job in the browser with JavaScript on: depth and runs on the new-job form, k runs per research step
side by side in each step card (live over the socket, and replayed the same after a reload), the synthesized
finding, the report and all four files (md, pdf, pptx, podcast), each checked with a real reader."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from pptx import Presentation

from research.jobs.models import JobStatus, ResearchJob, StepRun
from tests.e2e.conftest import shot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

K = 3


def _lanes(page) -> list[list[str]]:
    """Per heavy step card, the class list of each run lane (in order)."""
    return page.eval_on_selector_all(
        "#cards .step-card.heavy",
        "cards => cards.map(c => Array.from(c.querySelectorAll('.run-lane')).map(l => l.className))")


def test_heavy_job_shows_k_runs_per_step_live_then_the_finding_report_and_files(
        page, dora, asgi_server, worker, live_settings, tmp_path):
    base = asgi_server.url
    sign_in(page, base)
    page.goto(base + "/jobs/new/")
    page.fill("#id_question", "What limits grid-scale battery storage?")
    page.select_option("select[name=engine]", "offline")
    page.fill("#id_max_steps", "2")
    page.select_option("select[name=depth]", "heavy")
    page.fill("input[name=runs]", str(K))
    for box in page.query_selector_all("input[name=outputs]"):
        if not box.is_checked():
            box.click()
    page.check("#id_auto_accept")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    job_id = int(page.url.rstrip("/").split("/")[-1])
    assert ResearchJob.objects.get(pk=job_id).options["runs"] == K

    # Live: the step cards grow K run lanes each from the socket's events (nothing here reloads the page).
    page.wait_for_selector(f"#cards .step-card.heavy .run-lane >> nth={K - 1}", timeout=120_000)
    page.wait_for_selector("#job[data-status='done']", timeout=300_000)
    page.wait_for_selector("#cards .step-card.heavy >> nth=1", timeout=30_000)
    page.wait_for_selector(f".run-lane.run-done >> nth={2 * K - 1}", timeout=30_000)
    lanes = _lanes(page)
    assert len(lanes) == 2 and all(len(card) == K for card in lanes), lanes
    assert all("run-done" in lane for card in lanes for lane in card), lanes
    # Each lane says what it leaned on and what it found; the card shows the synthesized finding.
    assert page.locator(".run-lane .emphasis").first.inner_text().strip()
    assert page.locator(".run-lane .run-queries li").count() >= 2 * K
    # The runs read many of the same pages: each card lists a page once.
    for index in range(2):
        read = page.locator(f"#cards .step-card.heavy >> nth={index}").locator("li.page")
        urls = [read.nth(i).get_attribute("title") for i in range(read.count())]
        assert urls and all(urls) and len(urls) == len(set(urls)), urls
    findings = page.locator("#cards .step-card.heavy .sec-finding")
    assert findings.count() == 2 and findings.first.locator("h4").text_content() == "Synthesized finding"
    assert findings.first.locator("li.finding").text_content().strip()
    assert page.locator(".ev-step-synthesizing").count() == 2
    assert page.locator(".ev-run-completed").count() == 2 * K

    # A reload replays the same lanes from the event log (the static step list shows the runs too).
    page.reload()
    page.wait_for_selector(f".run-lane.run-done >> nth={2 * K - 1}", timeout=30_000)
    assert _lanes(page) == lanes
    assert page.locator(".static-steps .runs-summary li").count() == 2 * K
    assert StepRun.objects.filter(job_id=job_id, status="done").count() == 2 * K
    shot(page, "en-6-heavy-runs")  # with SCREENSHOTS_DIR set (docs/screenshots/)

    # The report and all four files.
    page.wait_for_selector("#report a.cite")
    for kind in ("md", "pdf", "pptx", "podcast"):
        page.wait_for_selector(f"#downloads li[data-kind='{kind}'] a", timeout=120_000)
    saved: dict[str, Path] = {}
    for kind in ("md", "pdf", "pptx", "podcast"):
        with page.expect_download() as download:
            page.click(f"#downloads li[data-kind='{kind}'] a >> nth=0")
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
        saved[kind] = path
    assert saved["md"].read_text().startswith("# ")
    text = subprocess.run(["pdftotext", str(saved["pdf"]), "-"], capture_output=True, text=True, check=True).stdout
    assert "References" in text
    assert len(Presentation(str(saved["pptx"])).slides) >= 2
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                            str(saved["podcast"])], capture_output=True, text=True, check=True)
    assert float(probe.stdout.strip()) > 1.0
    job = ResearchJob.objects.get(pk=job_id)
    assert job.status == JobStatus.DONE
