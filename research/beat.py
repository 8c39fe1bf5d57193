"""Celery beat's scheduler (settings.CELERY_BEAT_SCHEDULER): it runs the reaper itself instead of queueing it.

A reaper sent as a task waits in the `agents` queue until a pool slot is free, and when every slot is busy
(a loaded deployment, or the very worker that died held them) that is minutes: takeover would depend on
load. Here beat runs `reap_stale_work` every REAPER_INTERVAL_S in a thread of its own process, which
holds no pool slot; a run still going when the next is due is not doubled. Each run that completes
touches BEAT_HEARTBEAT_FILE (if set), which `python -m research.healthcheck beat` reads.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler
from celery.utils.log import get_logger

logger = get_logger(__name__)  # under Celery's logger, so it shows in beat's log

REAPER_TASK = "research.jobs.tasks.reap_stale_work"


def _reap_once() -> None:
    import django
    from django.conf import settings
    from django.db import close_old_connections

    try:
        django.setup()  # beat set Django up already; this is a no-op then
        from research.jobs.units.reaper import reap_stale_work

        counts = reap_stale_work()
        if any(counts.values()):
            logger.info("reaper: %s", counts)
        beat = str(getattr(settings, "BEAT_HEARTBEAT_FILE", "") or "")
        if beat:
            Path(beat).touch()
    except Exception:  # one failed run (database away) must not end beat; the next run tries again
        logger.exception("the reaper failed; it runs again in %s s", getattr(settings, "REAPER_INTERVAL_S", "?"))
    finally:
        close_old_connections()


class Scheduler(PersistentScheduler):
    """PersistentScheduler that runs the reaper entry in-process; every other entry is sent as usual."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._reaper: threading.Thread | None = None
        super().__init__(*args, **kwargs)

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        if entry.task != REAPER_TASK:
            super().apply_entry(entry, producer=producer)
            return
        # Said once at INFO (every few seconds would drown the log), then at DEBUG.
        log = logger.debug if self._reaper is not None else logger.info
        log("Scheduler: running due task %s (%s) in beat", entry.name, entry.task)
        if self._reaper is not None and self._reaper.is_alive():
            logger.warning("the reaper is still running from %.0f s ago; skipping this run",
                           time.monotonic() - getattr(self._reaper, "started_at", time.monotonic()))
            return
        thread = threading.Thread(target=_reap_once, name="reaper", daemon=True)
        thread.started_at = time.monotonic()  # type: ignore[attr-defined]
        thread.start()
        self._reaper = thread
