"""Rate limits on an atomic counter: one small function API for views, services and the JSON API.

Counting is django-ratelimit's fixed-window counter (``cache.add`` then ``cache.incr``, i.e.
Redis SET NX + INCR on the ``ratelimit`` cache), so parallel requests cannot both slip under a
limit and deleting what was created gives no quota back. Rates are ``"N/s|m|h|d"`` strings
(settings ``*_RATE``); an empty rate means "no limit".

API:
    ratelimit_hit(scope=..., key=..., rate=...) -> Verdict       count one use for one key
    ratelimit_request(request, scope=..., rate=...) -> Verdict    count per account and per IP
    ratelimited(scope, rate_setting)                               view decorator (POST only) → 429
    too_many_requests(request, verdict) -> HttpResponse            the 429 page with Retry-After

Logins are not counted here but by django-axes, which hooks ``authenticate()`` itself (so the site
login, the admin login and any later form are covered) and stores its failure counts in the same
``ratelimit`` cache; the ``login_*`` functions below are its settings (research/settings.py, AXES_*).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django_ratelimit.core import _split_rate, get_usage  # type: ignore[import-untyped]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int = 0
    limit: int = 0
    retry_after: int = 0  # seconds until the window that refused this use ends

    @property
    def message(self) -> str:
        return _("Too many requests: the limit is %(limit)d; try again in %(seconds)d seconds.") % {
            "limit": self.limit,
            "seconds": self.retry_after,
        }


ALLOWED = Verdict(allowed=True)


class RateLimited(Exception):
    """Raised by services that count a use themselves (e.g. job creation)."""

    def __init__(self, verdict: Verdict, message: str | None = None) -> None:
        super().__init__(message or verdict.message)
        self.verdict = verdict


def rate_window_text(rate: str) -> str:
    """The window of a rate such as "30/h" or "10/15m" in words ("60 minutes", "15 minutes", "1 day")."""
    period = rate.partition("/")[2].strip() or "s"
    count = int(period[:-1] or 1) if period[:-1].isdigit() else 1
    seconds = count * {"s": 1, "m": 60, "h": 3600, "d": 86400}.get(period[-1], 1)
    if seconds < 60:
        return _("%(n)d seconds") % {"n": seconds}
    if seconds <= 2 * 3600:
        return _("%(n)d minutes") % {"n": seconds // 60}
    if seconds < 2 * 86400:
        return _("%(n)d hours") % {"n": seconds // 3600}
    return _("%(n)d days") % {"n": seconds // 86400}


def ratelimit_hit(*, scope: str, key: str, rate: str) -> Verdict:
    """Count one use of `scope` by `key` (an account, an IP) and say whether it is allowed.

    Fails closed: when the counter cannot be reached the use is refused, with a short retry.
    """
    if not rate:
        return ALLOWED
    try:
        usage = get_usage(None, group=scope, key=lambda _group, _request: key, rate=rate, increment=True)
    except Exception:  # the cache server is down: refuse rather than go unlimited
        log.warning("rate limiter unavailable for %s; refusing", scope, exc_info=True)
        return Verdict(allowed=False, retry_after=5)
    if usage is None:  # RATELIMIT_ENABLE = False
        return ALLOWED
    return Verdict(
        allowed=not usage["should_limit"],
        count=int(usage["count"]),
        limit=int(usage["limit"]),
        retry_after=max(1, int(usage["time_left"])),
    )


def client_ip(request: HttpRequest) -> str:
    """The peer address (set RATELIMIT_IP_HEADER when a trusted proxy passes the client's one)."""
    header = getattr(settings, "RATELIMIT_IP_HEADER", "")
    if header and request.META.get(header):
        return str(request.META[header]).split(",")[0].strip()
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def ratelimit_request(request: HttpRequest, *, scope: str, rate: str) -> Verdict:
    """Count one use per account (the signed-in user) and per IP; refuse if either is over."""
    user = getattr(request, "user", None)
    keys = [f"ip:{client_ip(request)}"]
    if user is not None and user.is_authenticated:
        keys.append(f"user:{user.pk}")
    verdicts = [ratelimit_hit(scope=scope, key=key, rate=rate) for key in keys]
    refused = [v for v in verdicts if not v.allowed]
    return max(refused, key=lambda v: v.retry_after) if refused else ALLOWED


def too_many_requests(request: HttpRequest, verdict: Verdict, message: str | None = None) -> HttpResponse:
    response = render(request, "429.html", {"message": message or verdict.message}, status=429)
    response["Retry-After"] = str(verdict.retry_after)
    return response


def ratelimited(scope: str, rate_setting: str, methods: tuple[str, ...] = ("POST",)) -> Callable[[Any], Any]:
    """View decorator: count each POST per account and per IP against settings.<rate_setting>."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method in methods:
                verdict = ratelimit_request(request, scope=scope, rate=getattr(settings, rate_setting))
                if not verdict.allowed:
                    return too_many_requests(request, verdict)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


# --- Login throttling (django-axes settings point here) ---------------------------------------------


def _login_rate() -> tuple[int, int]:
    """LOGIN_RATE as (failures, window seconds); an empty rate is a limit no one reaches."""
    rate = settings.LOGIN_RATE
    if not rate:
        return 10**9, 1
    count, seconds = _split_rate(rate)
    return int(count), int(seconds)


def login_failure_limit(request: HttpRequest | None = None, credentials: Any = None) -> int:
    return _login_rate()[0]


def login_cool_off(request: HttpRequest | None = None) -> timedelta:
    return timedelta(seconds=_login_rate()[1])


def login_username(request: HttpRequest, credentials: Any = None) -> str | None:
    """The user name as counted: case and surrounding blanks do not make a new account to try."""
    name = (credentials or {}).get("username") if isinstance(credentials, dict) else None
    if name is None and request is not None and request.method == "POST":
        name = request.POST.get("username")
    return str(name).strip().lower() if name is not None else None


def login_lockout_response(request: HttpRequest, *_args: Any) -> HttpResponse:
    """The same 429 page and Retry-After as every other limit. Each refused attempt counts as a failure
    (axes' default), so the lock-out ends one whole window after the last attempt."""
    count, seconds = _login_rate()
    return too_many_requests(request, Verdict(allowed=False, count=count, limit=count, retry_after=seconds))


class LoginLimitReachedMiddleware:
    """Sits just inside axes' middleware. The attempt whose failure reaches the limit had its password
    checked, so it gets its own answer (the form saying the password is wrong), as before axes; only
    attempts refused without a check (count past the limit) become axes' 429."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        failures = getattr(request, "axes_failures_since_start", None)
        if getattr(request, "axes_locked_out", False) and failures is not None and failures <= login_failure_limit():
            request.axes_locked_out = False  # type: ignore[attr-defined]
        return response
