"""A whole offline job over a knowledge base holding one project's README, in-process (issue 32): the
real upload, extraction, chunking and knowledge-base search, the step units and the reporter. The answer
gives the install command with its citation, and a part nothing answers says so on its step's card (the
`step.completed` finding) and in the report."""

from __future__ import annotations

import pytest

from research.jobs import services
from research.jobs.models import JobStatus, ResearchJob, StepRun
from research.knowledge import services as kb_services
from research.report.citations import citation_numbers
from tests.agents.test_offline_answer import README
from tests.support.citecheck import check_citations
from tests.support.inline_units import drain, inline_broker


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    return inline_broker(monkeypatch)


def payloads(job: ResearchJob, type_: str) -> list[dict]:
    return [e.payload for e in job.events.filter(type=type_).order_by("seq")]


def test_an_offline_job_over_a_readme_answers_with_the_command_and_names_the_part_it_cannot(alice, sent):
    collection = kb_services.collection_create(owner=alice, name="flowq")
    kb_services.document_add(collection=collection, filename="README.md", data=README.encode())
    question = "How do I install Flowq with Redis support, and how much memory does a Flowq worker use?"
    job = services.job_create(user=alice, question=question, options={
        "engine": "offline", "kb": collection.pk, "web": False, "auto_accept": True, "max_steps": 2})
    drain(sent)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    report = job.report_versions.order_by("-number").first().markdown
    answer = report.split("## Answer", 1)[1].split("\n## ", 1)[0]
    assert "`pip install \"flowq[redis]\"` [1]" in answer
    # The memory part: no source says it, so the step's card and the report name it.
    cards = {p["step"]: p["finding"] for p in payloads(job, "step.completed")}
    memory = next(s for s in job.steps.all() if "memory" in s.title)
    assert cards[memory.step_id].startswith("No source found on “") and "memory" in cards[memory.step_id]
    assert "\n_No source found on “" in answer  # a note in italics, not an uncited claim
    assert not any(junk in answer for junk in ("vim", "Acme", "contribute"))
    sources = {s.number: s.text for s in job.sources.all()}
    prose = "\n".join(line for line in report.splitlines() if "pip install" not in line)
    assert check_citations(prose, sources) == []  # every quote is in the README chunk it cites


# More documents than one run reads: each a chunk of its own about Flowq's workers.
GUIDES = [
    "Flowq workers pull tasks from the broker and run them in child processes on the same machine.",
    "Each Flowq worker starts four child processes by default, one per CPU core on most small machines.",
    "Flowq workers acknowledge a task only after it finished, so a failed worker's task runs again elsewhere.",
    "Flowq retries a failed task three times by default, waiting longer before each new attempt.",
    "Flowq keeps scheduled tasks in the broker until their time comes, then hands them to a free worker.",
    "Flowq workers log every failed task with its arguments, so a failure can be replayed by hand.",
    "Flowq can send a failed task to a dead-letter queue once its retries are spent, for later inspection.",
    "Flowq workers stop taking new tasks on a warm shutdown and finish the ones they hold first.",
]


def test_a_heavy_offline_job_over_a_knowledge_base_runs_differ_and_no_finding_is_reported_as_nothing(
        alice, sent):
    collection = kb_services.collection_create(owner=alice, name="flowq")
    kb_services.document_add(collection=collection, filename="README.md", data=README.encode())
    for i, text in enumerate(GUIDES):
        kb_services.document_add(collection=collection, filename=f"workers-{i}.md",
                                 data=f"# Flowq workers, part {i + 1}\n\n{text}\n".encode())
    job = services.job_create(user=alice, question="How do Flowq workers handle failed tasks?", options={
        "engine": "offline", "kb": collection.pk, "web": False, "auto_accept": True, "max_steps": 1,
        "depth": "heavy", "runs": 3})
    drain(sent)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    # Each run read other chunks than the others (not three runs over the same four).
    read = [tuple(run.result["notes"]["sources"]) for run in StepRun.objects.filter(job=job).order_by("index")]
    assert len(read) == 3 and len(set(read)) == 3, read
    assert len({frozenset(r) for r in read}) > 1, read
    report = job.report_versions.order_by("-number").first().markdown
    assert "No source found" not in report and "had nothing" not in report
    step = job.steps.get()
    assert step.result["notes"]["synthesis"] and citation_numbers(step.result_md)
