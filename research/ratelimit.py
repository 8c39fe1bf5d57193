"""Rate limits on an atomic counter: one small function API for views, services and the JSON API.

Counting is django-ratelimit's fixed-window counter (``cache.add`` then ``cache.incr``, i.e.
Redis SET NX + INCR on the ``ratelimit`` cache), so parallel requests cannot both slip under a
limit and deleting what was created gives no quota back. Rates are ``"N/s|m|h|d"`` strings
(settings ``*_RATE``); an empty rate means "no limit".

API:
    ratelimit_hit(scope=..., key=..., rate=...) -> Verdict       count one use for one key
    ratelimit_request(request, scope=..., rate=...) -> Verdict    count per account (per IP when signed out)
    ratelimit_account(user=..., scope=..., rate_setting=...)       count in a service; raises RateLimited
    sliding_window_hit(scope=..., key=..., limit=..., window=..., cost=...)  a sliding window that counts cost
    ratelimited(scope, rate_setting)                               view decorator (POST only) → 429
    limited_in_service(rate_setting) / limit_patterns(...)         mark a view / wrap an included URLconf
    too_many_requests(request, verdict) -> HttpResponse            the 429 page with Retry-After
    CounterCache                                                   the ``ratelimit`` cache's backend
    CounterUnavailable                                             raised when the counter cannot be reached
    CounterUnavailableMiddleware                                   ... and turned into a 503 page

Logins are not counted here but by django-axes, which hooks ``authenticate()`` itself (so the site
login, the admin login and any later form are covered) and stores its failure counts in the same
``ratelimit`` cache; the ``login_*`` functions below are its settings (research/settings.py, AXES_*).

When the counter's Redis cannot be reached every throttle fails closed, the same way: the use is refused
with 503 and Retry-After ("temporarily unavailable"), never counted as allowed and never a 500. Failing
open would turn a Redis outage into unlimited password guessing; the broker is the same Redis, so little
else works during the outage anyway (docs/operations.md, "When the rate-limit counter is down").
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import redis
from django.conf import settings
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponse, JsonResponse
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


UNAVAILABLE_RETRY_AFTER_S = 30  # what a refusal during a counter outage asks the client to wait


class CounterUnavailable(Exception):
    """The rate-limit counter (the `ratelimit` cache's Redis) cannot be reached: the use is refused (503)."""

    retry_after = UNAVAILABLE_RETRY_AFTER_S

    @property
    def message(self) -> str:
        return _("A service this page needs cannot be reached right now. Nothing was changed; please try again "
                 "in %(seconds)d seconds.") % {"seconds": self.retry_after}


@contextmanager
def _counter_reached() -> Iterator[None]:
    try:
        yield
    except (redis.RedisError, OSError) as exc:
        log.warning("rate-limit counter unreachable (%s); refusing the request", exc)
        raise CounterUnavailable(str(exc)) from exc


class CounterCache(RedisCache):
    """The `ratelimit` cache (settings.CACHES): Django's Redis cache, with every failure to reach Redis raised
    as CounterUnavailable, whoever calls it (our counter, django-axes' login counts, later code), so one
    middleware can answer all of them the same way."""

    def add(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().add(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().get(*args, **kwargs)

    def set(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().set(*args, **kwargs)

    def touch(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().touch(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().delete(*args, **kwargs)

    def get_many(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().get_many(*args, **kwargs)

    def has_key(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().has_key(*args, **kwargs)

    def incr(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().incr(*args, **kwargs)

    def decr(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().decr(*args, **kwargs)

    def set_many(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().set_many(*args, **kwargs)

    def delete_many(self, *args: Any, **kwargs: Any) -> Any:
        with _counter_reached():
            return super().delete_many(*args, **kwargs)

    def clear(self) -> Any:
        with _counter_reached():
            return super().clear()


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

    Fails closed: when the counter cannot be reached it raises CounterUnavailable (503, never "allowed").
    """
    if not rate:
        return ALLOWED
    try:
        usage = get_usage(None, group=scope, key=lambda _group, _request: key, rate=rate, increment=True)
    except CounterUnavailable:
        raise
    except Exception as exc:  # another cache backend that cannot be reached: refuse rather than go unlimited
        log.warning("rate limiter unavailable for %s; refusing", scope, exc_info=True)
        raise CounterUnavailable(str(exc)) from exc
    if usage is None:  # RATELIMIT_ENABLE = False
        return ALLOWED
    if usage["limit"] == 0 and usage["time_left"] == -1:  # django-ratelimit's "the cache answered nothing"
        raise CounterUnavailable("the rate-limit cache returned no count")
    return Verdict(
        allowed=not usage["should_limit"],
        count=int(usage["count"]),
        limit=int(usage["limit"]),
        retry_after=max(1, int(usage["time_left"])),
    )


def sliding_window_hit(*, scope: str, key: str, limit: int, window: int, cost: int = 1) -> Verdict:
    """Charge `cost` to `key` over a sliding window of `window` seconds; refused (nothing charged) when the
    window would then hold more than `limit`.

    The count is the current fixed window's plus the previous one's weighted by how much of it still lies
    inside the sliding window, so no burst fits around a window edge (a fixed hourly window let 60 jobs
    through at 30/h). The charge is an atomic INCR, taken back when it goes over, so parallel requests
    cannot both slip under the limit.
    """
    if limit <= 0:
        return ALLOWED
    from django.core.cache import caches

    cache = caches[settings.RATELIMIT_USE_CACHE]
    now = time.time()
    index = int(now // window)
    into = (now - index * window) / window
    current, previous = f"rl-slide:{scope}:{key}:{index}", f"rl-slide:{scope}:{key}:{index - 1}"
    with _counter_reached():
        cache.add(current, 0, timeout=2 * window + 60)
        charged = int(cache.incr(current, cost))
        earlier = int(cache.get(previous) or 0)
        used = earlier * (1 - into) + charged
        if used <= limit:
            return Verdict(allowed=True, count=int(used), limit=limit)
        cache.decr(current, cost)
    # When enough of the previous window has slid out (or, failing that, when this one ends).
    spare = limit - (charged - cost) - cost
    wait = (1 - spare / earlier - into) * window if earlier and spare >= 0 else (1 - into) * window + 1
    return Verdict(allowed=False, count=int(used - cost), limit=limit, retry_after=max(1, int(wait + 0.999)))


def client_ip(request: HttpRequest) -> str:
    """The peer address (set RATELIMIT_IP_HEADER when a trusted proxy passes the client's one)."""
    header = getattr(settings, "RATELIMIT_IP_HEADER", "")
    if header and request.META.get(header):
        return str(request.META[header]).split(",")[0].strip()
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def ratelimit_request(request: HttpRequest, *, scope: str, rate: str) -> Verdict:
    """Count one use per account when signed in, else per IP. An office behind one address does not
    share its users' limits, and one account cannot spread its use over many addresses (issue 34)."""
    user = getattr(request, "user", None)
    key = f"user:{user.pk}" if user is not None and user.is_authenticated else f"ip:{client_ip(request)}"
    return ratelimit_hit(scope=scope, key=key, rate=rate)


def ratelimit_account(*, user: Any, scope: str, rate_setting: str) -> None:
    """Count one use of `scope` by an account in a service (web, API, MCP alike); RateLimited when over."""
    rate = str(getattr(settings, rate_setting))
    verdict = ratelimit_hit(scope=scope, key=f"user:{user.pk}", rate=rate)
    if not verdict.allowed:
        raise RateLimited(verdict, _("Too many requests: at most %(limit)d in %(window)s; please wait %(seconds)d "
                                     "seconds.") % {"limit": verdict.limit, "window": rate_window_text(rate),
                                                    "seconds": verdict.retry_after})


def too_many_requests(request: HttpRequest, verdict: Verdict, message: str | None = None) -> HttpResponse:
    response = render(request, "429.html", {"message": message or verdict.message}, status=429)
    response["Retry-After"] = str(verdict.retry_after)
    return response


def service_unavailable(request: HttpRequest, exc: CounterUnavailable) -> HttpResponse:
    """503 with Retry-After: JSON in the API's error shape under /api/, else a page saying what happened."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": exc.message, "errors": []}, status=503)
    else:
        response = render(request, "503.html", {"message": exc.message}, status=503)
    response["Retry-After"] = str(exc.retry_after)
    return response


class CounterUnavailableMiddleware:
    """Any view (a throttled form, the login through axes' backend and signals) that hits an unreachable
    counter answers 503 with Retry-After instead of a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, CounterUnavailable):
            return service_unavailable(request, exception)
        if isinstance(exception, RateLimited):  # a service counted the use (ratelimit_account): the 429 page
            return too_many_requests(request, exception.verdict, str(exception))
        return None


RATE_ATTR = "rate_setting"  # on a view: the setting that limits its POSTs (tests/security/test_post_limits.py)


def limited_in_service(rate_setting: str) -> Callable[[Any], Any]:
    """Mark a view whose POST is counted by the service it calls (ratelimit_account), so the API and MCP
    count the same; the middleware above turns the service's RateLimited into the 429 page."""

    def mark(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        setattr(view, RATE_ATTR, rate_setting)
        return view

    return mark


def limit_patterns(patterns: list[Any], scope: str, rate_setting: str) -> list[Any]:
    """Wrap every view of an included URLconf (the admin, i18n) in `ratelimited`; returns `patterns`."""
    from django.urls import URLPattern, URLResolver

    for entry in patterns:
        if isinstance(entry, URLResolver):
            limit_patterns(entry.url_patterns, scope, rate_setting)
        elif isinstance(entry, URLPattern) and not hasattr(entry.callback, RATE_ATTR):
            entry.callback = ratelimited(scope, rate_setting, methods=("POST", "PUT", "PATCH", "DELETE"))(
                entry.callback)
    return patterns


def ratelimited(scope: str, rate_setting: str, methods: tuple[str, ...] = ("POST",)) -> Callable[[Any], Any]:
    """View decorator: count each POST per account (per IP when signed out) against settings.<rate_setting>."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method in methods:
                verdict = ratelimit_request(request, scope=scope, rate=getattr(settings, rate_setting))
                if not verdict.allowed:
                    return too_many_requests(request, verdict)
            return view(request, *args, **kwargs)

        setattr(wrapped, RATE_ATTR, rate_setting)
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
    """The same 429 page and Retry-After as every other limit: for a (name, address) pair locked by axes, or
    for an attempt slowed down by research.logins (which put its wait on the request). A refused attempt
    is not counted as a failure (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False), so refusals
    do not push the end of a lock-out further away."""
    count, seconds = _login_rate()
    wait = int(getattr(request, "login_wait_s", 0) or 0)
    if wait:
        reason = getattr(request, "login_wait_reason", "")
        message = (_("Too many failed sign-ins from your network; please wait %(seconds)d seconds before trying "
                     "again.") if reason == "address" else
                   _("Too many failed sign-ins for this account; please wait %(seconds)d seconds before trying "
                     "again.")) % {"seconds": wait}
        return too_many_requests(request, Verdict(allowed=False, retry_after=wait), message)
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
