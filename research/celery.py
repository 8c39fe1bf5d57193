"""The Celery app. Its settings live in research/settings.py under CELERY_*."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")

app = Celery("research")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["research.jobs"])
