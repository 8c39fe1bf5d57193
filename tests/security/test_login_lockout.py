"""Sign-in: lock out a (user name, address) pair, slow wide guessing, never shut the owner out (issue 34).

Through Django's test client with the app's middleware and backends (axes + research.logins), counting in
the in-memory `ratelimit` cache; tests/security/test_ratelimits.py covers the same over daphne and Redis.
"""

from __future__ import annotations

import pytest
from django.test import Client

from research import logins

pytestmark = [pytest.mark.django_db]

ATTACKER = "203.0.113.7"
OWNER = "198.51.100.20"


def _login(path: str, username: str, password: str, address: str) -> int:
    response = Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})
    return response.status_code


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("admin", "admin@example.com", "right-admin-pass")


@pytest.mark.parametrize("path", ["/admin/login/", "/accounts/login/"])
def test_ten_wrong_passwords_for_admin_do_not_lock_the_owner_out_elsewhere(settings, admin_user, path):
    """Issue 34 case 1: 10 wrong passwords for `admin` (or "ADMIN ") from anywhere answered every later
    sign-in with 429, the right password from a fresh address included."""
    settings.LOGIN_RATE = "10/15m"
    statuses = [_login(path, "ADMIN " if n % 2 else "admin", f"wrong-{n}", ATTACKER) for n in range(12)]
    assert statuses[:10] == [200] * 10 and statuses[10:] == [429, 429], statuses
    # The attacker's own pair stays locked, the right password included.
    assert _login(path, "admin", "right-admin-pass", ATTACKER) == 429
    # The owner, from an address that has not failed, gets in.
    assert _login(path, "admin", "right-admin-pass", OWNER) == 302


def test_a_refused_attempt_does_not_re_arm_the_lock_out(settings, admin_user):
    settings.LOGIN_RATE = "3/15m"
    for n in range(3):
        _login("/accounts/login/", "admin", f"wrong-{n}", ATTACKER)
    cache = logins._cache()  # the in-memory `ratelimit` cache: its raw entries and their expiry times
    before = (dict(cache._cache), dict(cache._expire_info))
    assert _login("/accounts/login/", "admin", "wrong-again", ATTACKER) == 429
    after = (dict(cache._cache), dict(cache._expire_info))
    assert before == after  # nothing counted, no expiry moved


def test_made_up_names_from_an_office_address_do_not_lock_a_real_user_out(settings, alice):
    """Issue 34 case 7: 10 bad sign-ins with made-up names from one address locked a real user out there."""
    settings.LOGIN_RATE = "10/15m"
    office = "192.0.2.50"
    assert [_login("/accounts/login/", f"made-up-{n}", "x", office) for n in range(30)] == [200] * 30
    assert _login("/accounts/login/", "alice", "alice-pass-123", office) == 302


def test_an_address_guessing_many_names_is_slowed_with_a_growing_delay(settings, alice):
    settings.LOGIN_ADDRESS_RATE = "20/h"
    for n in range(20):
        assert _login("/accounts/login/", f"name-{n}", "x", ATTACKER) == 200
    response = Client(REMOTE_ADDR=ATTACKER).post("/accounts/login/", {"username": "name-20", "password": "x"})
    assert response.status_code == 200  # the 21st is checked, and starts the delay
    slowed = Client(REMOTE_ADDR=ATTACKER).post("/accounts/login/", {"username": "alice",
                                                                      "password": "alice-pass-123"})
    assert slowed.status_code == 429 and 1 <= int(slowed["Retry-After"]) <= 2
    assert "from your network" in slowed.content.decode()
    # Not closed for everyone: another address signs in at once.
    assert _login("/accounts/login/", "alice", "alice-pass-123", OWNER) == 302


def test_the_delay_grows_with_each_failure_and_is_capped(settings):
    settings.LOGIN_DELAY_MAX_S = 900
    assert [logins.delay_for(n, 20) for n in range(19, 26)] == [0, 0, 1, 2, 4, 8, 16]
    assert logins.delay_for(100, 20) == 900


def test_one_name_guessed_from_many_addresses_slows_those_addresses_not_the_owner(settings, alice):
    settings.LOGIN_NAME_RATE = "10/h"
    for n in range(11):
        assert _login("/accounts/login/", "alice", f"wrong-{n}", f"10.1.0.{n}") == 200
    # An address that has failed is slowed on this name ...
    assert _login("/accounts/login/", "alice", "alice-pass-123", "10.1.0.3") == 429
    # ... the owner from an address that has not failed is not.
    assert _login("/accounts/login/", "alice", "alice-pass-123", OWNER) == 302
