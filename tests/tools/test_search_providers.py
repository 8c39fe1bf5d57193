"""Search providers as registered classes with typed errors (research/tools/search/)."""

from __future__ import annotations

import socket

import httpx
import pytest

from research.agents.types import SearchHit
from research.tools.search import (
    PROVIDERS,
    ProviderError,
    ProviderErrorKind,
    SearchError,
    SearchProvider,
    provider_label,
    register,
    web_search,
)
from research.tools.search.errors import connection_kind


@pytest.fixture
def registry():
    """The providers' registry, restored after the test (a test registers its own)."""
    saved = dict(PROVIDERS)
    yield PROVIDERS
    PROVIDERS.clear()
    PROVIDERS.update(saved)


def test_a_provider_registered_once_is_used_by_the_chain_from_settings(registry, settings, closed_port_url):
    """Adding a provider is one class: registered, it is found by its name in SEARCH_PROVIDERS, reads its
    own setting (no option class or settings.py edit) and falls in line behind the others."""

    @register
    class Echo(SearchProvider):
        name = "echo"
        label = "Echo Search"

        def search(self, query, max_results, opts):
            base = opts.setting("ECHO_BASE_URL", "https://echo.example")
            return [SearchHit(title=query, url=f"{base}/{i}", snippet=query, provider="") for i in range(max_results)]

    settings.SEARCH_PROVIDERS = ["searxng", "echo"]
    settings.SEARXNG_URL = closed_port_url
    settings.ECHO_BASE_URL = "https://echo.test"
    errors = []
    hits = web_search("hello", max_results=2, on_provider_error=errors.append)
    assert [(h.url, h.provider) for h in hits] == [("https://echo.test/0", "echo"), ("https://echo.test/1", "echo")]
    assert [(e.provider, e.kind) for e in errors] == [("searxng", ProviderErrorKind.REFUSED)]
    assert provider_label("echo") == "Echo Search"


def test_a_provider_setting_may_come_from_the_environment(registry, monkeypatch):
    @register
    class Keyed(SearchProvider):
        name = "keyed"
        label = "Keyed"

        def search(self, query, max_results, opts):
            return [SearchHit(title="k", url=f"https://k.example/{opts.setting('KEYED_API_KEY')}", snippet="")]

    monkeypatch.setenv("KEYED_API_KEY", "from-env")
    assert web_search("q", providers=["keyed"])[0].url == "https://k.example/from-env"


def _kinds(providers, **kwargs):
    with pytest.raises(SearchError) as err:
        web_search("q", providers=providers, **kwargs)
    return [(e.provider, e.kind, e.status) for e in err.value.errors]


def test_refused_connection_is_typed(closed_port_url):
    assert _kinds(["searxng"], searxng_url=closed_port_url) == [("searxng", ProviderErrorKind.REFUSED, None)]


def test_http_status_is_typed_with_its_status(test_site):
    assert _kinds(["searxng"], searxng_url=f"{test_site.url}/status/500") == [
        ("searxng", ProviderErrorKind.HTTP_STATUS, 500)]
    assert _kinds(["searxng"], searxng_url=f"{test_site.url}/status/429") == [
        ("searxng", ProviderErrorKind.QUOTA, 429)]


def test_timeout_is_typed(test_site):
    assert _kinds(["searxng"], searxng_url=f"{test_site.url}/slow", timeout=0.5) == [
        ("searxng", ProviderErrorKind.TIMEOUT, None)]


def test_not_configured_and_unknown_are_typed():
    assert _kinds(["searxng", "tavily", "nonesuch"], searxng_url="", tavily_api_key="") == [
        ("searxng", ProviderErrorKind.NOT_CONFIGURED, None), ("tavily", ProviderErrorKind.NOT_CONFIGURED, None),
        ("nonesuch", ProviderErrorKind.UNKNOWN_PROVIDER, None)]


def test_an_unreadable_answer_is_a_parse_error(monkeypatch):
    def fake_get(url, params, timeout, headers, **_):
        return httpx.Response(200, text="<html>not json</html>", request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", fake_get)
    assert _kinds(["searxng"], searxng_url="http://searx.invalid") == [("searxng", ProviderErrorKind.PARSE, None)]


@pytest.mark.parametrize("status", [432, 433])
def test_tavily_plan_limits_are_quota(monkeypatch, status):
    def fake_post(url, json, headers, timeout, **_):
        return httpx.Response(status, json={"detail": "limit"}, request=httpx.Request("POST", url))

    monkeypatch.setattr(httpx, "post", fake_post)
    assert _kinds(["tavily"], tavily_api_key="k") == [("tavily", ProviderErrorKind.QUOTA, status)]


def test_a_provider_raises_its_own_typed_error(registry):
    @register
    class Picky(SearchProvider):
        name = "picky"
        label = "Picky"

        def search(self, query, max_results, opts):
            raise ProviderError("monthly quota spent", kind=ProviderErrorKind.QUOTA)

    with pytest.raises(SearchError) as err:
        web_search("q", providers=["picky"])
    (error,) = err.value.errors
    assert error.as_dict() == {"provider": "picky", "label": "Picky", "kind": "quota", "status": None,
                               "message": "monthly quota spent"}
    assert str(err.value) == "search failed: picky: monthly quota spent"


def test_connection_kind_reads_the_os_error_under_the_client_error():
    def wrapped(cause: BaseException) -> BaseException:
        try:
            try:
                raise cause
            except OSError as exc:
                raise httpx.ConnectError(str(exc)) from exc
        except httpx.ConnectError as outer:
            return outer

    assert connection_kind(wrapped(ConnectionRefusedError(111, "refused"))) == ProviderErrorKind.REFUSED
    assert connection_kind(wrapped(socket.gaierror(-2, "Name or service not known"))) == ProviderErrorKind.UNRESOLVED
    assert connection_kind(wrapped(OSError(113, "No route to host"))) == ProviderErrorKind.UNREACHABLE
