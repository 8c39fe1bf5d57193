"""The running job graph is the declared one (research/jobs/states.py GRAPH): the docs show it as
generated, job_set_status logs each move it allows, and scripts/graph_coverage.py can tell an edge no
test took."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from research.jobs.models import JobStatus, ResearchJob
from research.jobs.states import GRAPH, TRANSITIONS, InvalidTransition, graph_mermaid, graph_table, job_set_status

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def _block(text: str, name: str) -> str:
    start, end = f"<!-- job-graph:{name} -->", f"<!-- /job-graph:{name} -->"
    assert text.count(start) == 1 and text.count(end) == 1, f"docs/architecture.md lacks the {name} block"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def test_the_docs_show_the_declared_graph():
    text = DOC.read_text(encoding="utf-8")
    assert _block(text, "table") == graph_table()
    assert _block(text, "diagram") == f"```mermaid\n{graph_mermaid()}\n```"


def test_every_status_is_declared_once_and_every_target_is_a_status():
    statuses = [stage.status for stage in GRAPH]
    assert len(statuses) == len(set(statuses)) and set(statuses) == set(JobStatus)
    for stage in GRAPH:
        assert set(stage.next) <= set(JobStatus), stage
        assert all(why.strip() for why in stage.next.values()), f"{stage.status}: every edge says why"
    assert TRANSITIONS == {stage.status: frozenset(stage.next) for stage in GRAPH}


@pytest.mark.django_db
def test_a_move_is_logged_and_an_undeclared_one_refused(alice, caplog):
    job = ResearchJob.objects.create(owner=alice, question="q", status=JobStatus.QUEUED)
    with caplog.at_level(logging.INFO, logger="research.jobs.transitions"):
        job_set_status(job=job, status=JobStatus.COORDINATING)
        with pytest.raises(InvalidTransition):
            job_set_status(job=job, status=JobStatus.RENDERING)
    lines = [r.getMessage() for r in caplog.records if r.name == "research.jobs.transitions"]
    assert lines == [f"transition {job.pk} queued coordinating"]


def _coverage(log: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "graph_coverage.py"), str(log)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_graph_coverage_names_an_edge_no_test_took(tmp_path):
    edges = [(stage.status.value, target.value) for stage in GRAPH for target in stage.next]
    log = tmp_path / "moves.log"
    log.write_text("".join(f"transition 1 {a} {b}\n" for a, b in edges), encoding="utf-8")
    assert _coverage(log).returncode == 0
    missing = edges[5]
    log.write_text("".join(f"transition 1 {a} {b}\n" for a, b in edges if (a, b) != missing), encoding="utf-8")
    result = _coverage(log)
    assert result.returncode == 1
    assert f"not taken by any test: {missing[0]} -> {missing[1]}" in result.stdout


def test_graph_coverage_fails_without_a_log(tmp_path):
    assert _coverage(tmp_path / "absent.log").returncode == 1




def test_job_advance_runs_exactly_the_stage_handlers_the_graph_names():
    from research.jobs.units.stages import HANDLERS

    named = {stage.driver for stage in GRAPH} - {"user", "steps", "renders", ""}
    assert named == set(HANDLERS)
