"""Per-account request rate for the API (settings.API_RATE, e.g. "120/m").

Counted by the app's one rate limiter (research.ratelimit: an atomic counter in Redis shared by every web
process), so the limit holds across processes and hosts, like the web UI's limits.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.throttling import BaseThrottle

from research.ratelimit import ratelimit_hit

# One throttle object serves every request, so the refused request's wait is kept per context (thread or
# task), not on the object, where a request checked in between could replace it with its own.
_retry_after: ContextVar[int] = ContextVar("api_retry_after", default=0)


class ApiThrottle(BaseThrottle):
    def allow_request(self, request: HttpRequest) -> bool:
        user: Any = getattr(request, "auth", None)
        key = f"user:{user.pk}" if getattr(user, "pk", None) else f"ip:{self.get_ident(request)}"
        verdict = ratelimit_hit(scope="api", key=key, rate=settings.API_RATE)
        _retry_after.set(0 if verdict.allowed else max(1, verdict.retry_after))
        return verdict.allowed

    def wait(self) -> float | None:
        # Read right after allow_request, in the same context, by ninja for the Retry-After header.
        seconds = _retry_after.get()
        return float(seconds) if seconds else None
