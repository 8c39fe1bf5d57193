from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest


def site(request: HttpRequest) -> dict[str, Any]:
    return {"SIGNUP_ENABLED": settings.SIGNUP_ENABLED}
