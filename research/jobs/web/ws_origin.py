"""WebSocket Origin check on scheme + host + port (Channels' AllowedHostsOriginValidator checks host names only).

A socket is accepted when its Origin is the site's own origin, the same rule Django's CSRF
check applies to forms: the scheme the client used (ws → http, wss → https, or the proxy's
X-Forwarded-Proto when SECURE_PROXY_SSL_HEADER trusts it) plus the Host header, which must
be in ALLOWED_HOSTS; or when it is listed exactly in CSRF_TRUSTED_ORIGINS. No Origin at all
(a non-browser client) is refused too: browsers always send one.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_tuple(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = (parts.scheme or "").lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def site_origin(scope: dict[str, Any]) -> tuple[str, str, int] | None:
    """The origin this socket was opened against, or None when its Host is not one of ours."""
    headers = _headers(scope)
    host = headers.get("host", "")
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    scheme = "https" if scope.get("scheme") == "wss" else "http"
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name, value = proxy
        header = name.removeprefix("HTTP_").replace("_", "-").lower()
        if header in headers:
            scheme = "https" if headers[header].split(",")[0].strip() == value else "http"
    return _origin_tuple(f"{scheme}://{host}")


def websocket_origin_allowed(scope: dict[str, Any]) -> bool:
    origin = _headers(scope).get("origin")
    if not origin:
        return False
    theirs = _origin_tuple(origin)
    if theirs is None:
        return False
    trusted = {_origin_tuple(o) for o in settings.CSRF_TRUSTED_ORIGINS if "*" not in o}
    return theirs == site_origin(scope) or theirs in trusted


class SameOriginValidator:
    """ASGI middleware: refuse (403 at the handshake) sockets from any other origin."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not websocket_origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.app(scope, receive, send)
