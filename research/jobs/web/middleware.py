"""A strict Content-Security-Policy on every response; paths with control characters are 404."""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse

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


class InvalidPathMiddleware:
    """A path holding NUL or another control character names no page or file: 404 before any view (and
    any file-system call, which raises ValueError on NUL) sees it. First in MIDDLEWARE, so every route,
    converter and file-serving view is covered, the static files too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if any(ord(c) < 0x20 or c == "\x7f" for c in request.path_info):
            raise Http404("invalid characters in the path")
        return self.get_response(request)
