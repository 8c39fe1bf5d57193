"""Whole jobs on the model engine: a real worker, the vLLM test double, the local test site, real files."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pptx import Presentation

from research.jobs import services
from research.jobs.models import JobStatus, LLMCall, Source
from tests.integration.helpers import assert_event_log_complete, wait_for
from tests.support.fake_llm import Reply
from tests.support.scenario import agent_of

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _fetched_urls(job) -> set[str]:
    return {e.payload["url"] for e in job.events.filter(type="step.activity") if e.payload.get("kind") == "fetch"}


def test_llm_job_with_every_output(alice, worker, live_settings, scenario, alice_client):
    job = services.job_create(user=alice, question="How have solar power costs changed since 2010?",
                              options={"engine": "llm", "auto_accept": True, "max_steps": 3,
                                       "outputs": "pdf,pptx,podcast"})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=240, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    events = assert_event_log_complete(job)
    types = [e.type for e in events]
    assert "report.delta" in types  # the report streamed
    assert {"coordinator", "planner", "researcher", "coder", "reporter"} <= set(scenario.calls)

    # Every citation resolves to a registered source, and every web source was really fetched.
    report = job.report_versions.order_by("-number").first().markdown
    body, _, refs = report.partition("## References")
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
    sources = {s.number: s for s in Source.objects.filter(job=job)}
    assert cited and cited <= set(sources)
    assert "[99]" not in report and job.invalid_citations >= 1  # the model's made-up citation was dropped
    for n in cited:
        assert f"[{n}]" in refs
        if sources[n].kind == "web":
            assert sources[n].url in _fetched_urls(job)

    # Real files, checked with real tools.
    arts = {a.name: Path(a.file.path) for a in job.artifacts.all()}
    assert {"report.md", "report.pdf", "slides.pptx", "podcast.mp3", "podcast.vtt", "podcast.txt"} <= set(arts)
    text = subprocess.run(["pdftotext", str(arts["report.pdf"]), "-"], capture_output=True, text=True).stdout
    title = report.splitlines()[0].lstrip("# ").strip()
    assert title.split()[0] in text and "References" in text
    deck = Presentation(str(arts["slides.pptx"]))
    assert len(deck.slides) >= 3
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json",
                            str(arts["podcast.mp3"])], capture_output=True, text=True)
    assert float(json.loads(probe.stdout)["format"]["duration"]) > 3

    # Cost per agent is recorded and shown.
    agents = set(LLMCall.objects.filter(job=job).values_list("agent", flat=True))
    assert {"planner", "researcher", "reporter"} <= agents
    job.refresh_from_db()
    assert job.prompt_tokens > 0 and job.completion_tokens > 0
    page = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "researcher" in page and "Prompt tokens" in page

    # Each slide is previewed as a PNG on the job page (LibreOffice), served to the owner only.
    slide_urls = re.findall(rf'src="(/jobs/{job.pk}/previews/slide-\d+\.png)"', page)
    assert len(slide_urls) == len(deck.slides), slide_urls
    png = alice_client.get(slide_urls[0])
    assert png.status_code == 200 and b"".join(png.streaming_content).startswith(b"\x89PNG")
    outsider = User.objects.create_user("charlie-previews", password="x")
    charlie = Client()
    charlie.force_login(outsider)
    assert charlie.get(slide_urls[0]).status_code == 404


def test_chinese_question_gets_a_chinese_report(alice, worker, live_settings, scenario):
    job = services.job_create(user=alice, question="中国新能源汽车的销量发展如何？",
                              options={"engine": "llm", "auto_accept": True, "max_steps": 2})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert job.locale == "zh-CN"
    report = job.report_versions.get().markdown
    cjk = len(re.findall(r"[\u4e00-\u9fff]", report))
    assert cjk > 50 and "## 参考文献" in report


def test_transient_model_errors_are_retried_and_the_job_succeeds(alice, worker, live_settings, scenario, fake_llm):
    # LLM_MAX_RETRIES=2 in tests: each call may fail twice and still succeed.
    fake_llm.inject("503", 1)
    fake_llm.inject("truncated_stream", 1)
    job = services.job_create(user=alice, question="Why are heat pumps efficient?",
                              options={"engine": "llm", "auto_accept": True, "max_steps": 2})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert not fake_llm.pending_injections()  # both failures were served and survived


def test_planner_that_never_returns_valid_json_fails_the_job_clearly(alice, worker, live_settings, fake_llm):
    from tests.support.scenario import research_scenario

    def broken_planner(request: dict) -> Reply:
        if agent_of(request) == "planner":
            return Reply(content="{ this is not a plan")
        return research_scenario(request)

    fake_llm.set_responder(broken_planner)
    try:
        job = services.job_create(user=alice, question="What limits battery storage?",
                                  options={"engine": "llm", "auto_accept": True, "max_steps": 2})
        job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    finally:
        fake_llm.set_responder(research_scenario)
    assert job.status == JobStatus.FAILED
    assert "plan" in job.error.lower()
    failed = job.events.get(type="job.failed")
    assert failed.payload["error"] == job.error
    assert not job.report_versions.exists()  # never an empty success


def test_model_server_unreachable_fails_clearly(alice, worker, live_settings, fake_llm):
    fake_llm.down()
    try:
        job = services.job_create(user=alice, question="How cheap is wind power?",
                                  options={"engine": "llm", "auto_accept": True, "max_steps": 2})
        job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    finally:
        fake_llm.up()
    assert job.status == JobStatus.FAILED
    assert job.error and job.events.filter(type="job.failed").exists()


def test_report_edit_rerenders_outputs(alice, worker, live_settings, alice_client):
    job = services.job_create(user=alice, question="How efficient are heat pumps?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 2, "outputs": "pdf"})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=180, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    edited = "# Edited heat pump report\n\nA sentence written by the user.\n"
    response = alice_client.post(f"/jobs/{job.pk}/report/edit/", {"markdown": edited})
    assert response.status_code == 302
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, timeout=120, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert [v.author for v in job.report_versions.order_by("number")] == ["reporter", "user"]
    pdf = Path(job.artifacts.get(name="report.pdf").file.path)
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True).stdout
    assert "A sentence written by the user." in " ".join(text.split())  # wherever the lines break
    assert Path(job.artifacts.get(name="report.md").file.path).read_text() == edited
