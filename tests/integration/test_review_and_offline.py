"""Plan review with the model double, engine auto-selection, knowledge-base-only and Chinese offline jobs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pptx import Presentation

from research.agents.types import Plan
from research.jobs import services
from research.jobs.models import JobStatus, Source
from tests.integration.helpers import wait_for
from tests.support.citecheck import check_citations, report_sources
from tests.support.scenario import agent_of

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def test_replan_feedback_reaches_the_planner_and_makes_a_new_version(alice, worker, live_settings, fake_llm):
    job = services.job_create(user=alice, question="What limits grid battery storage?",
                              options={"engine": "llm", "max_steps": 3})
    job = wait_for(job, {JobStatus.AWAITING_REVIEW, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.AWAITING_REVIEW, job.error
    first = job.plan_versions.get()
    before = len(fake_llm.requests)
    feedback = "Focus on lithium supply and include a step about sodium-ion batteries"
    services.plan_submit(job=job, plan=Plan.model_validate(first.plan), base_version=first.number,
                         action="replan", feedback=feedback)
    job = wait_for(job, {JobStatus.AWAITING_REVIEW, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.AWAITING_REVIEW, job.error
    planner_requests = [r for r in fake_llm.requests[before:] if agent_of(r) == "planner"]
    assert planner_requests, "the planner was not asked again"
    assert feedback in json.dumps(planner_requests[-1], ensure_ascii=False)
    versions = list(job.plan_versions.order_by("number"))
    assert [v.author for v in versions] == ["planner", "planner"]
    assert versions[1].feedback == feedback
    assert job.events.filter(type="plan.ready", payload__version=2).exists()


def test_auto_engine_falls_back_to_offline_when_no_model_answers(alice, worker, live_settings, fake_llm):
    fake_llm.down()
    try:
        job = services.job_create(user=alice, question="How efficient are heat pumps?",
                                  options={"engine": "auto", "auto_accept": True, "max_steps": 2})
        job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    finally:
        fake_llm.up()
    assert job.status == JobStatus.DONE, job.error
    assert job.engine == "offline"
    assert job.events.get(type="job.engine").payload["engine"] == "offline"


def test_offline_chinese_question(alice, worker, live_settings):
    job = services.job_create(user=alice, question="中国新能源汽车销量增长的原因是什么？",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 3})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    report = job.report_versions.get().markdown
    assert job.locale == "zh-CN" and "## 参考文献" in report and "## 主要发现" in report
    assert check_citations(report, report_sources(report, Source.objects.filter(job=job))) == []


def test_knowledge_base_only_job_needs_no_web(alice, worker, live_settings, test_site):
    from research.knowledge import services as kb

    collection = kb.collection_create(owner=alice, name="grid")
    kb.document_add(collection=collection, filename="storage.md", data=(
        b"# Grid storage notes\n\nPumped hydro provides most of the world's grid storage capacity today. "
        b"Lithium-ion battery pack prices fell by about 80 percent between 2013 and 2023. "
        b"Grid batteries are mostly used for short-duration storage of two to four hours.\n"))
    hits_before = len(test_site.requests)
    job = services.job_create(user=alice, question="How is grid energy storage done today?",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 2, "kb": collection.pk,
                                       "web": False})
    job = wait_for(job, {JobStatus.DONE, JobStatus.FAILED}, worker=worker)
    assert job.status == JobStatus.DONE, job.error
    assert len(test_site.requests) == hits_before, "a knowledge-base-only job used the web"
    sources = list(Source.objects.filter(job=job))
    assert sources and all(s.kind == "kb" for s in sources)
    report = job.report_versions.get().markdown
    assert check_citations(report, report_sources(report, sources)) == []
    assert "knowledge base" in report.split("## References")[1]


def test_cli_offline_all_outputs(worker, stack_env, live_settings):
    """The outside check's command: every cited URL was fetched and every cited sentence is in its source."""
    result = subprocess.run(
        [sys.executable, "manage.py", "research", "How have solar power costs changed?", "--engine", "offline",
         "--auto-accept", "--outputs", "md,pdf,pptx,podcast", "--max-steps", "3", "--json"],
        cwd=ROOT, env=stack_env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["status"] == "done", data
    paths = {k: Path(v) for k, v in data["artifacts"].items()}
    assert {"md", "pdf", "pptx", "podcast"} <= set(paths) and all(p.is_file() for p in paths.values())
    report = paths["md"].read_text()
    sources = {s.number: s for s in Source.objects.filter(job_id=data["job"])}
    assert check_citations(report, report_sources(report, sources.values())) == []
    fetched = {e["payload"]["url"] for e in _events(data["job"]) if e["payload"].get("kind") == "fetch"}
    assert {s.url for s in sources.values()} <= fetched
    assert len(Presentation(str(paths["pptx"])).slides) >= 3
    pdf_text = subprocess.run(["pdftotext", str(paths["pdf"]), "-"], capture_output=True, text=True).stdout
    assert "References" in pdf_text
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                            str(paths["podcast"])], capture_output=True, text=True)
    assert float(probe.stdout.strip()) > 5


def _events(job_id: int) -> list[dict]:
    from research.jobs.selectors import job_events_after

    return job_events_after(job_id=job_id, after=0)
