"""Per-token request rate for the API (settings.API_RATE, e.g. "120/m").

django-ninja's AuthRateThrottle keeps its history in Django's cache, so the limit holds per cache
(per process with the default local-memory cache, shared across processes with a Redis cache).
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from ninja.throttling import AuthRateThrottle


class ApiThrottle(AuthRateThrottle):
    scope = "api"

    def __init__(self) -> None:
        super().__init__(settings.API_RATE)

    def allow_request(self, request: HttpRequest) -> bool:
        # Read the setting on each request, so a changed setting (or a test override) applies at once.
        if self.rate != settings.API_RATE:
            self.rate = settings.API_RATE
            self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request)
