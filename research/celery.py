"""The Celery app. Its settings live in research/settings.py under CELERY_*."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")

app = Celery("research")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["research.jobs", "research.knowledge"])


@worker_init.connect
def _warm_up(**_: object) -> None:
    """Import the heavy libraries in the worker parent, before the pool forks, so every child starts warm.

    A cold child spent 1-3 s of CPU on its first page (trafilatura, the TLD list, WeasyPrint), which showed
    up as stalls in other jobs' live streams. No database connection is opened here (not fork-safe).
    """
    import logging

    try:
        import trafilatura

        import research.render.pdf  # WeasyPrint
        import research.tools.fetch
        import research.tools.search  # noqa: F401
        from research.tls import tls_context

        tls_context()
        page = "<html><head><title>t</title></head><body><article><p>Warm up the extractor.</p></article></body></html>"
        trafilatura.extract(page, url="https://example.com/warm-up", output_format="markdown")
    except Exception:  # warming is an optimisation; a worker must start regardless
        logging.getLogger(__name__).warning("worker warm-up failed", exc_info=True)


@worker_init.connect
def _sweep_work_dirs(**_: object) -> None:
    """A (re)started worker removes the work folders its host's dead processes left (research/jobs/storage.py)."""
    import logging

    try:
        from research.jobs.storage import work_dirs_sweep

        removed = work_dirs_sweep()
        if removed:
            logging.getLogger(__name__).info("removed %d work folder(s) of dead units: %s", len(removed), removed)
    except Exception:  # cleaning up is housekeeping; a worker must start regardless
        logging.getLogger(__name__).warning("could not sweep work folders", exc_info=True)
