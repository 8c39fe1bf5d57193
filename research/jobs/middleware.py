"""A strict Content-Security-Policy on every response."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self'; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'; object-src 'none'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith("/admin/"):
            response.headers.setdefault("Content-Security-Policy", CSP)
        else:
            response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'; object-src 'none'")
        return response
