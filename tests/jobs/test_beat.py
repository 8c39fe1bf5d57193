"""Beat runs the reaper itself (research/beat.py) and leaves a heartbeat that its health check reads."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.utils import timezone

from research import beat
from research.jobs import dispatch, services
from research.jobs.models import JobStatus, ResearchJob

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)  # the reaper runs in a thread with its own connection


def _scheduler() -> beat.Scheduler:
    scheduler = beat.Scheduler.__new__(beat.Scheduler)  # no schedule file or broker: only apply_entry is used
    scheduler._reaper = None
    return scheduler


def test_the_reaper_entry_runs_in_beat_and_touches_the_heartbeat(alice, settings, tmp_path, monkeypatch):
    sent: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: sent.append(a))
    settings.BEAT_HEARTBEAT_FILE = str(tmp_path / "reaper.alive")
    lapsed = services.job_create(user=alice, question="q?", options={})
    ResearchJob.objects.filter(pk=lapsed.pk).update(status=JobStatus.PLANNING,
                                                    stage_lease_until=timezone.now() - timedelta(seconds=5))
    sent.clear()
    scheduler = _scheduler()
    scheduler.apply_entry(SimpleNamespace(task=beat.REAPER_TASK, name="reap-stale-work"))
    assert scheduler._reaper is not None
    scheduler._reaper.join(timeout=30)
    assert ("advance", lapsed.pk) in sent, "the reaper ran in beat's thread (no task was queued for it)"
    assert (tmp_path / "reaper.alive").exists()


def test_a_reaper_run_still_going_is_not_doubled(monkeypatch):
    started: list[int] = []
    release = __import__("threading").Event()

    def slow() -> None:
        started.append(1)
        release.wait(10)

    monkeypatch.setattr(beat, "_reap_once", slow)
    scheduler = _scheduler()
    entry = SimpleNamespace(task=beat.REAPER_TASK, name="reap-stale-work")
    scheduler.apply_entry(entry)
    first = scheduler._reaper
    scheduler.apply_entry(entry)  # due again while the first still runs
    assert scheduler._reaper is first
    release.set()
    first.join(timeout=10)  # type: ignore[union-attr]
    assert started == [1]


def _check(env: dict[str, str]) -> int:
    return subprocess.run([sys.executable, "-m", "research.healthcheck", "beat"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60).returncode


def test_the_beat_health_check_reads_the_heartbeats_age(tmp_path):
    alive = tmp_path / "reaper.alive"
    env = dict(os.environ, BEAT_HEARTBEAT_FILE=str(alive), REAPER_INTERVAL_S="2")
    assert _check(env) == 1  # no run yet
    alive.touch()
    assert _check(env) == 0
    stale = time.time() - 120  # no run for two minutes: beat or its reaper is stuck
    os.utime(alive, (stale, stale))
    assert _check(env) == 1
    assert _check({k: v for k, v in env.items() if k != "BEAT_HEARTBEAT_FILE"}) == 2
