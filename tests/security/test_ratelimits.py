"""Rate limits: an atomic Redis counter (research/ratelimit.py), 429 with Retry-After, deletes free nothing."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User

from research import ratelimit
from research.jobs import services
from research.jobs.models import ResearchJob
from tests.support.procs import AsgiServer

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def redis_counter(settings, redis_server) -> str:
    """Count on the real test Redis (the rest of the suite counts in memory)."""
    settings.CACHES = {
        **settings.CACHES,
        "ratelimit": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_server.url},
    }
    return str(redis_server.url)


def test_parallel_hits_never_pass_more_than_the_limit(redis_counter):
    key = "parallel-" + secrets.token_hex(4)
    with ThreadPoolExecutor(max_workers=16) as pool:
        verdicts = list(pool.map(lambda _: ratelimit.ratelimit_hit(scope="t", key=key, rate="10/h"), range(60)))
    assert sum(v.allowed for v in verdicts) == 10
    refused = [v for v in verdicts if not v.allowed]
    assert all(v.limit == 10 and 0 < v.retry_after <= 3600 for v in refused)


def test_deleting_jobs_gives_no_quota_back(redis_counter, settings, alice):
    settings.JOB_CREATE_RATE = "3/h"
    for n in range(3):
        services.job_create(user=alice, question=f"Question {n}?", options={"engine": "offline"})
    ResearchJob.objects.filter(owner=alice).delete()
    assert not ResearchJob.objects.filter(owner=alice).exists()
    with pytest.raises(services.RateLimited) as refused:
        services.job_create(user=alice, question="One more?", options={"engine": "offline"})
    assert refused.value.verdict.retry_after > 0 and "3" in str(refused.value)


@pytest.fixture
def limited_server(django_db_setup, stack_env, redis_server) -> Iterator[AsgiServer]:
    """daphne with small limits counted in the test Redis."""
    server = AsgiServer({**stack_env, "RATELIMIT_CACHE_URL": redis_server.url, "JOB_CREATE_RATE": "5/h",
                         "LOGIN_RATE": "4/15m"}).start()
    yield server
    server.stop()


def _session(user: User, client) -> dict[str, str]:
    client.force_login(user)
    token = secrets.token_hex(16)  # any 32-character secret works as the double-submit CSRF cookie
    return {"Cookie": f"sessionid={client.cookies['sessionid'].value}; csrftoken={token}", "X-CSRFToken": token}


def test_parallel_job_posts_over_http_stop_at_the_limit(limited_server, alice, client):
    headers = _session(alice, client)

    def post(n: int) -> httpx.Response:
        return httpx.post(limited_server.url + "/jobs/new/", headers=headers, timeout=60,
                          data={"question": f"Parallel question {n}?", "engine": "offline", "web": "on",
                                "outputs": "pdf", "style": "academic", "locale": "auto",
                                "max_steps": "2"})

    with ThreadPoolExecutor(max_workers=12) as pool:
        responses = list(pool.map(post, range(12)))
    statuses = sorted(r.status_code for r in responses)
    assert ResearchJob.objects.filter(owner=alice).count() == 5, statuses
    refused = [r for r in responses if r.status_code == 429]
    assert len(refused) == 7, statuses
    assert all(int(r.headers["Retry-After"]) > 0 for r in refused)
    assert "please wait" in refused[0].text


def _server_user(model, username: str, password: str, **fields) -> User:
    """A user whose password the server (production hashers, not the tests' MD5) can check."""
    return model.objects.create(username=username, password=make_password(password, hasher="pbkdf2_sha256"),
                                **fields)


def _login(server: AsgiServer, username: str, password: str, path: str = "/accounts/login/",
           ip: str | None = None) -> httpx.Response:
    """A fresh browser posting one login form (`ip`: the client address a trusted proxy would pass)."""
    headers = {"X-Real-IP": ip} if ip else {}
    with httpx.Client(base_url=server.url, timeout=30, headers=headers) as http:
        page = http.get(path)
        token = page.cookies["csrftoken"]
        return http.post(path, data={"username": username, "password": password, "csrfmiddlewaretoken": token})


def test_login_is_throttled_per_account_and_per_ip(limited_server, django_user_model):
    _server_user(django_user_model, "dora", "right-password-1")

    def login(username: str, password: str) -> httpx.Response:
        return _login(limited_server, username, password)

    assert [login("dora", f"wrong-{n}").status_code for n in range(4)] == [200] * 4  # the form, with an error
    refused = login("dora", "right-password-1")  # the right password no longer helps
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "sessionid" not in refused.cookies
    assert b"Too many requests" in refused.content
    # The same IP trying another account is refused as well (per-IP counter).
    assert login("someone-else", "x").status_code == 429


@pytest.fixture
def proxied_server(django_db_setup, stack_env, redis_server) -> Iterator[AsgiServer]:
    """daphne behind a 'trusted proxy' header, so one test can be several clients."""
    server = AsgiServer({**stack_env, "RATELIMIT_CACHE_URL": redis_server.url, "LOGIN_RATE": "4/15m",
                         "RATELIMIT_IP_HEADER": "HTTP_X_REAL_IP"}).start()
    yield server
    server.stop()


def test_an_account_locked_out_on_the_site_login_is_locked_out_of_the_admin_login(proxied_server,
                                                                                 django_user_model):
    """B3: the admin login took 40 wrong passwords in 10 s and then the right one, after a lock-out."""
    _server_user(django_user_model, "erin", "right-password-2", is_staff=True, is_superuser=True)
    assert [_login(proxied_server, "Erin", f"wrong-{n}", ip=f"10.0.0.{n}").status_code
            for n in range(4)] == [200] * 4  # four clients, one account (user names count case-blind)
    admin = _login(proxied_server, "erin", "right-password-2", path="/admin/login/", ip="10.0.1.1")
    assert admin.status_code == 429 and int(admin.headers["Retry-After"]) > 0
    assert "sessionid" not in admin.cookies
    # Failures on the admin login count too: an IP that fails there is refused on the site login.
    assert [_login(proxied_server, "nobody", f"x{n}", path="/admin/login/", ip="10.0.2.1").status_code
            for n in range(4)] == [200] * 4
    assert _login(proxied_server, "frank", "whatever", ip="10.0.2.1").status_code == 429
    # Someone else, elsewhere, still signs in.
    _server_user(django_user_model, "gina", "right-password-3")
    ok = _login(proxied_server, "gina", "right-password-3", ip="10.0.3.1")
    assert ok.status_code == 302 and "sessionid" in ok.cookies, ok.text[:3000]


def test_sign_up_is_throttled_per_ip(settings, client):
    settings.SIGNUP_RATE = "3/h"
    statuses = [client.post("/accounts/signup/", {"username": f"new{n}", "password": "x"}).status_code
                for n in range(4)]
    assert statuses[:3] != [429] * 3 and statuses[3] == 429, statuses
    response = client.post("/accounts/signup/", {})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0


def test_live_report_preview_is_throttled(settings, alice_client, alice_objects):
    settings.PREVIEW_RATE = "2/m"
    url = f"/jobs/{alice_objects['job_id']}/report/preview/"
    assert [alice_client.post(url, {"markdown": "# x"}).status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.parametrize(
    ("setting", "method", "url"),
    [
        ("RERENDER_RATE", "post", "/jobs/{job}/rerender/"),
        ("REPORT_EDIT_RATE", "post", "/jobs/{job}/report/edit/"),
        ("KB_UPLOAD_RATE", "post", "/kb/{collection}/upload/"),
    ],
)
def test_each_limited_action_answers_429_with_retry_after(settings, alice_client, alice_objects, setting, method, url):
    setattr(settings, setting, "2/h")
    target = url.format(job=alice_objects["job_id"], collection=alice_objects["collection_id"])
    statuses = [getattr(alice_client, method)(target, {"kind": "pdf", "markdown": "# x"}).status_code
                for _ in range(3)]
    assert statuses[:2] != [429, 429] and statuses[2] == 429, statuses
    response = getattr(alice_client, method)(target, {})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert b"Too many requests" in response.content

