"""Celery task for knowledge bases: thin, loads by id and calls the service. Nothing imports this module:
research/jobs/dispatch.py sends it by name, and the worker finds it by autodiscovery."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from research.knowledge import services


# The service checks KB_INDEX_TIME_S between pages; the soft limit stops one page that runs on and
# the hard limit kills what ignores even that (the document then fails after KB_INDEX_MAX_ATTEMPTS).
@shared_task(name="research.knowledge.tasks.document_index", soft_time_limit=settings.KB_INDEX_TIME_S + 10,
             time_limit=settings.KB_INDEX_TIME_S + 30)
def document_index(document_id: int) -> None:
    services.document_index(document_id=document_id)
