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
from research.runtime import free_port
from tests.support.procs import AsgiServer, RedisServer

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
    # The lock is on the (name, address) pair (issue 34): the same address trying another name is checked.
    assert login("someone-else", "x").status_code == 200


@pytest.fixture
def proxied_server(django_db_setup, stack_env, redis_server) -> Iterator[AsgiServer]:
    """daphne behind a 'trusted proxy' header, so one test can be several clients."""
    server = AsgiServer({**stack_env, "RATELIMIT_CACHE_URL": redis_server.url, "LOGIN_RATE": "4/15m",
                         "RATELIMIT_IP_HEADER": "HTTP_X_REAL_IP"}).start()
    yield server
    server.stop()


def test_an_account_locked_out_on_the_site_login_is_locked_out_of_the_admin_login(proxied_server,
                                                                                 django_user_model):
    """B3: the admin login took 40 wrong passwords in 10 s and then the right one, after a lock-out. Since
    issue 34 the lock is on the (name, address) pair: the owner elsewhere still gets in."""
    _server_user(django_user_model, "erin", "right-password-2", is_staff=True, is_superuser=True)
    assert [_login(proxied_server, "Erin" if n % 2 else "erin ", f"wrong-{n}", ip="10.0.0.1").status_code
            for n in range(4)] == [200] * 4  # one client, one account (user names count case-blind)
    admin = _login(proxied_server, "erin", "right-password-2", path="/admin/login/", ip="10.0.0.1")
    assert admin.status_code == 429 and int(admin.headers["Retry-After"]) > 0
    assert "sessionid" not in admin.cookies
    # Failures on the admin login count too: a pair that fails there is refused on the site login.
    assert [_login(proxied_server, "nobody", f"x{n}", path="/admin/login/", ip="10.0.2.1").status_code
            for n in range(4)] == [200] * 4
    assert _login(proxied_server, "nobody", "whatever", ip="10.0.2.1").status_code == 429
    # The owner from an address that has not failed signs in (issue 34: no lock on the name alone).
    ok = _login(proxied_server, "erin", "right-password-2", path="/admin/login/", ip="10.0.3.1")
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



# --- The counter's Redis is down: every throttle fails closed with 503 + Retry-After, never 500 -------------


@pytest.fixture
def counter_down(settings, monkeypatch) -> str:
    """The `ratelimit` cache as production configures it (research.ratelimit.CounterCache), on a port where
    nothing listens."""
    from axes.handlers.proxy import AxesProxyHandler

    url = f"redis://127.0.0.1:{free_port()}/0"
    settings.CACHES = {**settings.CACHES, "ratelimit": {"BACKEND": "research.ratelimit.CounterCache",
                                                        "LOCATION": url}}
    monkeypatch.setattr(AxesProxyHandler, "implementation", None)  # axes keeps its cache object: make a new one
    return url


def _refused_while_down(response) -> None:
    assert response.status_code == 503, response.content[:2000]
    assert response["Retry-After"] == str(ratelimit.UNAVAILABLE_RETRY_AFTER_S)
    assert "cannot be reached right now" in response.content.decode()


def test_the_counter_refuses_rather_than_allows_when_redis_is_unreachable(counter_down):
    with pytest.raises(ratelimit.CounterUnavailable):
        ratelimit.ratelimit_hit(scope="t", key="k", rate="10/h")


@pytest.mark.parametrize(
    ("setting", "url", "data"),
    [
        ("RERENDER_RATE", "/jobs/{job}/rerender/", {"kind": "pdf"}),
        ("REPORT_EDIT_RATE", "/jobs/{job}/report/edit/", {"markdown": "# x"}),
        ("PREVIEW_RATE", "/jobs/{job}/report/preview/", {"markdown": "# x"}),
        ("KB_UPLOAD_RATE", "/kb/{collection}/upload/", {}),
    ],
)
def test_each_throttled_action_answers_503_while_its_counter_is_down(alice_client, alice_objects, counter_down,
                                                                      setting, url, data):
    target = url.format(job=alice_objects["job_id"], collection=alice_objects["collection_id"])
    _refused_while_down(alice_client.post(target, data))


def test_sign_up_answers_503_and_creates_no_account_while_the_counter_is_down(counter_down, client,
                                                                             django_user_model):
    _refused_while_down(client.post("/accounts/signup/", {"username": "newbie", "password": "a-long-pass-9"}))
    assert not django_user_model.objects.filter(username="newbie").exists()


def test_login_answers_503_while_the_counter_is_down(counter_down, alice, client):
    assert client.get("/accounts/login/").status_code == 200  # showing the form needs no counter
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"})
    _refused_while_down(response)
    assert "sessionid" not in response.cookies


def test_a_new_job_keeps_its_question_and_nothing_is_created_while_the_counter_is_down(counter_down, alice,
                                                                                      alice_client):
    response = alice_client.post("/jobs/new/", {"question": "Why is the sky blue?", "engine": "offline",
                                                "web": "on", "outputs": "pdf", "style": "academic",
                                                "locale": "auto", "max_steps": "2"})
    _refused_while_down(response)
    assert "Why is the sky blue?" in response.content.decode()  # the form comes back filled in
    assert not ResearchJob.objects.filter(owner=alice).exists()


def test_the_api_answers_503_json_while_the_counter_is_down(counter_down, alice):
    from django.test import Client

    from research.api import services as token_services

    _token, secret = token_services.token_create(user=alice, name="ci")
    response = Client().get("/api/v1/jobs", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    assert "cannot be reached" in response.json()["detail"]


@pytest.fixture
def counter_redis() -> Iterator[RedisServer]:
    """A Redis of the test's own for the counter only, so the test can stop it (the broker's stays up)."""
    server = RedisServer(f"redis://127.0.0.1:{free_port()}/0").start()
    yield server
    server.stop()


@pytest.fixture
def outage_server(django_db_setup, stack_env, counter_redis) -> Iterator[AsgiServer]:
    server = AsgiServer({**stack_env, "RATELIMIT_CACHE_URL": counter_redis.url, "LOGIN_RATE": "3/15m"}).start()
    yield server
    server.stop()


def test_logins_fail_closed_while_redis_is_down_and_are_throttled_again_once_it_is_back(
        outage_server, counter_redis, django_user_model):
    """Over daphne, with the production cache backend: a stopped Redis makes the login answer 503 (it was a
    500), the right password included; once Redis is back the lock-out counts again."""
    _server_user(django_user_model, "hana", "right-password-4")
    assert _login(outage_server, "hana", "right-password-4").status_code == 302  # signs in while Redis is up

    counter_redis.stop()
    assert httpx.get(outage_server.url + "/accounts/login/").status_code == 200  # the form still shows
    refused = _login(outage_server, "hana", "right-password-4")
    assert refused.status_code == 503, refused.text[:3000]
    assert int(refused.headers["Retry-After"]) > 0 and "sessionid" not in refused.cookies
    assert "cannot be reached right now" in refused.text
    assert _login(outage_server, "hana", "wrong").status_code == 503  # not counted, not let through either
    assert "rate-limit counter unreachable" in outage_server.log.read_text(errors="replace")  # logged

    counter_redis.start()
    assert [_login(outage_server, "hana", f"wrong-{n}").status_code for n in range(3)] == [200] * 3
    locked = _login(outage_server, "hana", "right-password-4")
    assert locked.status_code == 429 and b"Too many requests" in locked.content
