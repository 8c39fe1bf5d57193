"""Event types and payloads are declared once (research/jobs/event_types.py): emitting an undeclared type or
payload fails in tests, every type the code emits is declared, and the docs' table is the declarations'."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from research.jobs import dispatch, services
from research.jobs.event_types import EVENTS, UndeclaredEvent, event_table_markdown
from research.jobs.events import event_emit, events_emit
from research.jobs.models import JobEvent

ROOT = Path(__file__).resolve().parents[2]
# Built as f"{kind}.{end}" by the one claim protocol of steps and runs (research/jobs/units/claims.py).
CLAIM_KINDS, CLAIM_ENDS = ("step", "run"), ("completed", "cancelled", "failed", "requeued")


@pytest.fixture
def job(alice, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    return services.job_create(user=alice, question="q?", options={})


@pytest.mark.django_db
def test_the_tests_run_strict(settings):
    assert settings.EVENTS_STRICT is True


@pytest.mark.django_db
@pytest.mark.parametrize(("type_", "payload"), [
    ("step.progress", {"step": "a"}),  # no such type
    ("job.status", {"status": "done", "why": "x"}),  # an undeclared key
    ("job.status", {}),  # a missing key
    ("step.failed", {"step": "a", "error": ["not", "text"]}),  # a wrong value type
    ("step.activity", {"kind": "teleport", "step": "a"}),  # an undeclared kind
    ("step.activity", {"kind": "fetch", "url": "https://example.org", "bytes": 10}),  # a key its kind lacks
])
def test_an_undeclared_event_fails_and_nothing_is_stored(job, type_, payload):
    before = JobEvent.objects.count()
    with pytest.raises(UndeclaredEvent):
        event_emit(job_id=job.pk, type=type_, payload=payload)
    with pytest.raises(UndeclaredEvent):
        events_emit(job_id=job.pk, events=[("job.cancelling", {}), (type_, payload)])
    assert JobEvent.objects.count() == before


@pytest.mark.django_db
def test_a_declared_event_passes(job):
    event_emit(job_id=job.pk, type="step.activity", payload={"step": "a", "run": 1, "kind": "kb", "query": "q"})
    event_emit(job_id=job.pk, type="job.done", payload={})
    assert list(job.events.order_by("seq").values_list("type", flat=True))[-2:] == ["step.activity", "job.done"]


@pytest.mark.django_db
def test_in_production_an_undeclared_event_is_logged_and_kept(job, settings, caplog):
    settings.EVENTS_STRICT = False
    with caplog.at_level(logging.ERROR, logger="research.jobs.events"):
        event = event_emit(job_id=job.pk, type="step.progress", payload={"step": "a"})
    assert event.pk and "not declared" in caplog.text


def _emitted_literals() -> set[str]:
    """Every event type written as a literal where research/ emits one: event_emit(type="…"), ctx.emit("…"),
    events_emit([("…", …)]), and module constants named EVENT."""
    found: set[str] = set()
    for path in (ROOT / "research").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")).endswith(
                    "emit"):
                args = [k.value for k in node.keywords if k.arg == "type"] + node.args[:1]
                for arg in args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.add(arg.value)
                    elif isinstance(arg, ast.IfExp):
                        found.update(a.value for a in (arg.body, arg.orelse) if isinstance(a, ast.Constant))
                for kw in node.keywords:
                    if kw.arg == "events":
                        found.update(c.value for c in ast.walk(kw.value) if isinstance(c, ast.Constant)
                                     and isinstance(c.value, str) and "." in c.value)
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "EVENT" for t in node.targets):
                if isinstance(node.value, ast.Constant):
                    found.add(node.value.value)
    return {f for f in found if "." in f and " " not in f}


def test_every_event_the_code_emits_is_declared_and_every_declared_one_is_emitted():
    emitted = _emitted_literals()
    assert emitted - set(EVENTS) == set()
    built = {f"{kind}.{end}" for kind in CLAIM_KINDS for end in CLAIM_ENDS}
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "research").rglob("*.py")
                       if p.name != "event_types.py")
    assert {"plan.ready", "plan.updated"} <= emitted | {t for t in EVENTS if f'"{t}"' in source}
    never = {t for t in EVENTS if t not in emitted and t not in built and f'"{t}"' not in source}
    assert never == set(), "declared but never emitted"


def test_the_docs_table_is_generated_from_the_declarations():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert event_table_markdown() in doc, "run: python scripts/event_table.py --write"
    assert "`search.checked`" in event_table_markdown()  # the one the hand-written table had missed
    check = subprocess.run([sys.executable, "scripts/event_table.py", "--check"], cwd=ROOT, capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout
