"""Sign-in throttling around django-axes: lock out a (user name, address) pair, slow down wide guessing.

django-axes locks the pair (the user name as counted, the client address) after LOGIN_RATE failures
(research/settings.py, AXES_LOCKOUT_PARAMETERS). A lock on the name alone would let anyone shut any
account (the issue "Fair share"), and a lock on the address alone would shut an office behind one NAT,
so neither exists. Two wider patterns are slowed instead, never closed:

- one address failing on many names (more than LOGIN_ADDRESS_RATE failures in its window): every
  further attempt from that address waits a delay that doubles with each failure over the threshold;
- one name failing from many addresses (more than LOGIN_NAME_RATE): attempts on that name wait such a
  delay, but only from addresses that have failed a sign-in themselves within the window. The owner
  signing in from an address with no failures is never delayed.

A delayed attempt is answered 429 with Retry-After before any password is checked and is not counted
as a failure, so waiting is all it takes. Failure counts live in the `ratelimit` cache (Redis) beside
axes' own; the choice against OWASP's lock-out advice is explained in docs/operations.md.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.cache import caches
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest
from django_ratelimit.core import _split_rate  # type: ignore[import-untyped]

from research.ratelimit import client_ip, login_username

REFUSED_ATTR = "login_refused_unchecked"  # set on a request refused before its password was checked
WAIT_ATTR = "login_wait_s"  # how long a slowed request must wait (seconds)
REASON_ATTR = "login_wait_reason"  # "address" or "name"


def _threshold(rate: str) -> tuple[int, int]:
    """A rate "N/window" as (free failures, window seconds); empty means no slowing."""
    if not rate:
        return 10**9, 1
    count, seconds = _split_rate(rate)
    return int(count), int(seconds)


def delay_for(failures: int, free: int) -> int:
    """The wait after the `failures`-th failure when `free` pass without delay: 1, 2, 4, … s, capped."""
    over = failures - free
    if over <= 0:
        return 0
    return int(min(2 ** min(over - 1, 30), settings.LOGIN_DELAY_MAX_S))


def _cache() -> Any:
    return caches[settings.AXES_CACHE]


def _count_key(kind: str, value: str) -> str:
    return f"login-spread:{kind}:{value}"


def _wait_key(kind: str, value: str) -> str:
    return f"login-wait:{kind}:{value}"


def _remaining(key: str) -> int:
    until = _cache().get(key)
    return max(0, int(float(until) - time.time() + 0.999)) if until else 0


def login_wait(request: HttpRequest, username: str | None) -> tuple[int, str]:
    """(seconds this sign-in must wait, why) — (0, "") when it may go ahead."""
    address = client_ip(request)
    wait = _remaining(_wait_key("address", address))
    if wait:
        return wait, "address"
    # The name's delay holds back only addresses that have failed themselves: the owner elsewhere gets in.
    if username and _cache().get(_count_key("address", address)):
        wait = _remaining(_wait_key("name", username))
        if wait:
            return wait, "name"
    return 0, ""


def _count_failure(kind: str, value: str, rate: str) -> None:
    free, window = _threshold(rate)
    cache = _cache()
    key = _count_key(kind, value)
    if cache.add(key, 1, timeout=window):
        failures = 1
    else:
        failures = int(cache.incr(key))
    delay = delay_for(failures, free)
    if delay:
        cache.set(_wait_key(kind, value), time.time() + delay, timeout=delay + 1)


class LoginSlowdownBackend:
    """First in AUTHENTICATION_BACKENDS: refuses an attempt that must still wait, before axes and before
    any password check. Django's authenticate() stops at the PermissionDenied; the axes middleware then
    answers with research.ratelimit.login_lockout_response, which reads the wait from the request."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None,
                     password: str | None = None, **kwargs: Any) -> None:
        if request is None:
            return None
        from axes.handlers.proxy import AxesProxyHandler

        credentials = {"username": username}
        name = login_username(request, credentials)
        wait, reason = login_wait(request, name)
        if wait:
            setattr(request, WAIT_ATTR, wait)
            setattr(request, REASON_ATTR, reason)
            setattr(request, REFUSED_ATTR, True)
            request.axes_locked_out = True  # type: ignore[attr-defined]
            raise PermissionDenied("sign-in slowed down")
        if not AxesProxyHandler.is_allowed(request, credentials):
            setattr(request, REFUSED_ATTR, True)  # axes refuses this pair without a check: not a new failure
        return None
    # No get_user(): this backend never signs anyone in, and Django's force_login() and session loading
    # skip a backend without it.


@receiver(user_login_failed, dispatch_uid="research.logins.count_failure")
def count_failure(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None,
                  **kwargs: Any) -> None:
    """Count a checked failure per address and per name; refused attempts are not failures."""
    if request is None or getattr(request, REFUSED_ATTR, False):
        return
    _count_failure("address", client_ip(request), settings.LOGIN_ADDRESS_RATE)
    name = login_username(request, credentials)
    if name:
        _count_failure("name", name, settings.LOGIN_NAME_RATE)
