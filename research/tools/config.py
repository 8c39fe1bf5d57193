"""Settings for the tools: Django's when it is configured, the default otherwise (tools also run alone)."""

from __future__ import annotations

from typing import Any


def setting(name: str, default: Any) -> Any:
    try:
        from django.conf import settings

        if settings.configured:
            return getattr(settings, name, default)
    except ImportError:  # used without Django
        pass
    return default
