"""Deep-research web app: Django project package."""

from research.celery import app as celery_app

__all__ = ["celery_app"]
