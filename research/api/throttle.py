"""Per-account request rate for the API (settings.API_RATE, e.g. "120/m").

Counted by the app's one rate limiter (research.ratelimit: an atomic counter in Redis shared by every web
process), so the limit holds across processes and hosts, like the web UI's limits.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.throttling import BaseThrottle

from research.ratelimit import ratelimit_hit


class ApiThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._retry_after = 0

    def allow_request(self, request: HttpRequest) -> bool:
        user: Any = getattr(request, "auth", None)
        key = f"user:{user.pk}" if getattr(user, "pk", None) else f"ip:{self.get_ident(request)}"
        verdict = ratelimit_hit(scope="api", key=key, rate=settings.API_RATE)
        self._retry_after = verdict.retry_after
        return verdict.allowed

    def wait(self) -> float | None:
        # Read right after allow_request by ninja for the Retry-After header.
        return float(self._retry_after) if self._retry_after else None
