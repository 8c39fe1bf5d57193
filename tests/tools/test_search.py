"""web_search: SearXNG against the test site, the fallback chain, knowledge merge, dedup, errors."""

from __future__ import annotations

import re

import httpx
import pytest

from research.agents.types import SearchHit
from research.tools import search as search_mod
from research.tools.search import SearchError, dedupe, normalize_url, web_search
from tests.support.site import TAVILY_TEST_KEY


def _hit(url, title="t", provider=""):
    return SearchHit(title=title, url=url, snippet="s", provider=provider)


@pytest.fixture
def fake_provider(monkeypatch):
    """Register a provider named "fake" that records its calls and returns canned hits."""
    calls = []

    class Fake(search_mod.SearchProvider):
        name = "fake"
        label = "Fake"

        def search(self, query, max_results, opts):
            calls.append(query)
            return [_hit(f"https://fake.example/{i}", f"Fake {i}") for i in range(max_results)]

    monkeypatch.setitem(search_mod.PROVIDERS, "fake", Fake())
    return calls


def test_searxng_against_test_site(test_site):
    hits = web_search("solar power costs", providers=["searxng"], searxng_url=test_site.url)
    assert hits, "the test site should answer"
    assert hits[0].url == f"{test_site.url}/articles/solar-power-costs.html"
    assert all(h.provider == "searxng" for h in hits)
    assert all(h.url.startswith(test_site.url) for h in hits)
    assert any(re.search(r"\d", h.snippet) for h in hits), "snippets carry numbers"
    assert len({h.url for h in hits}) == len(hits)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("heat pump efficiency", "/articles/heat-pump-efficiency.html"),
        ("battery storage prices", "/articles/battery-prices.html"),
        ("新能源汽车 销量", "/zh/nev-sales.html"),
        ("光伏 装机", "/zh/china-pv-installations.html"),
    ],
)
def test_searxng_ranks_relevant_pages(test_site, query, expected):
    hits = web_search(query, providers=["searxng"], searxng_url=test_site.url, max_results=5)
    assert len(hits) >= 2
    assert hits[0].url.endswith(expected)


def test_max_results(test_site):
    hits = web_search("solar", providers=["searxng"], searxng_url=test_site.url, max_results=3)
    assert len(hits) == 3


def test_settings_are_the_defaults(test_site, settings):
    settings.SEARCH_PROVIDERS = ["searxng"]
    settings.SEARXNG_URL = test_site.url
    hits = web_search("heat pump efficiency")
    assert hits and hits[0].url.endswith("/articles/heat-pump-efficiency.html")


def test_falls_back_when_first_provider_fails(closed_port_url, fake_provider):
    errors = []
    hits = web_search(
        "anything",
        providers=["searxng", "fake"],
        searxng_url=closed_port_url,
        on_provider_error=lambda e: errors.append((e.provider, e.message)),
        max_results=3,
    )
    assert [h.url for h in hits] == [f"https://fake.example/{i}" for i in range(3)]
    assert [name for name, _ in errors] == ["searxng"]
    assert "ConnectError" in errors[0][1]
    assert fake_provider == ["anything"]


def test_first_provider_with_results_wins(test_site, fake_provider):
    hits = web_search("heat pump", providers=["searxng", "fake"], searxng_url=test_site.url)
    assert hits and all(h.provider == "searxng" for h in hits)
    assert fake_provider == []  # never asked


def test_empty_answer_moves_on_without_error(test_site, fake_provider):
    errors = []
    hits = web_search(
        "zzzz-no-such-word",
        providers=["searxng", "fake"],
        searxng_url=test_site.url,
        on_provider_error=lambda e: errors.append(e),
    )
    assert hits and hits[0].url.startswith("https://fake.example/")
    assert errors == []


def test_all_empty_is_not_an_error(test_site):
    assert web_search("zzzz-no-such-word", providers=["searxng"], searxng_url=test_site.url) == []


def test_timeout_is_reported_and_chain_continues(test_site, fake_provider):
    errors = []
    hits = web_search(
        "solar",
        providers=["searxng", "fake"],
        searxng_url=f"{test_site.url}/slow",  # its /slow/search hangs
        timeout=0.5,
        on_provider_error=lambda e: errors.append((e.provider, e.message)),
    )
    assert hits[0].provider == "fake"
    assert errors == [("searxng", "timed out after 0.5 s")]


def test_every_provider_failing_raises_with_all_reasons(closed_port_url, monkeypatch):
    class Broken(search_mod.SearchProvider):
        name = "broken"
        label = "Broken"

        def search(self, query, max_results, opts):
            raise RuntimeError("provider exploded")

    monkeypatch.setitem(search_mod.PROVIDERS, "broken", Broken())
    reported = []
    with pytest.raises(SearchError) as err:
        web_search(
            "q",
            providers=["searxng", "tavily", "broken", "nonesuch"],
            searxng_url=closed_port_url,
            tavily_api_key="",
            on_provider_error=lambda e: reported.append(e.provider),
        )
    names = [name for name, _ in err.value.reasons]
    assert names == ["searxng", "tavily", "broken", "nonesuch"]
    assert reported == names
    message = str(err.value)
    assert "TAVILY_API_KEY" in message and "provider exploded" in message and "unknown search provider" in message


def test_tavily_with_key(test_site, settings):
    settings.TAVILY_API_URL = f"{test_site.url}/tavily/search"
    hits = web_search("battery storage", providers=["tavily"], tavily_api_key=TAVILY_TEST_KEY, max_results=4)
    assert 0 < len(hits) <= 4
    assert all(h.provider == "tavily" for h in hits)
    with pytest.raises(SearchError, match="401"):
        web_search("battery storage", providers=["tavily"], tavily_api_key="wrong-key")


def test_knowledge_hits_are_merged_and_deduplicated(test_site):
    web_first = f"{test_site.url}/articles/solar-power-costs.html"

    def kb(query, limit):
        assert limit == 8
        return [
            SearchHit(title="My notes on solar", url="kb://doc/1#chunk-3", snippet="LCOE notes", provider="knowledge"),
            _hit(web_first.upper().replace("/ARTICLES/SOLAR-POWER-COSTS.HTML", "/articles/solar-power-costs.html/")),
        ]

    hits = web_search(
        "solar power costs", providers=["searxng", "knowledge"], searxng_url=test_site.url, knowledge=kb
    )
    urls = [h.url for h in hits]
    assert urls[0] == web_first
    assert "kb://doc/1#chunk-3" in urls
    assert sum(normalize_url(u) == normalize_url(web_first) for u in urls) == 1
    assert hits[-1].provider == "knowledge"


def test_knowledge_only_when_listed(test_site):
    def kb(query, limit):
        raise AssertionError("must not be called")

    hits = web_search("solar", providers=["searxng"], searxng_url=test_site.url, knowledge=kb)
    assert hits


def test_knowledge_answers_when_web_fails(closed_port_url):
    errors = []
    hits = web_search(
        "q",
        providers=["searxng", "knowledge"],
        searxng_url=closed_port_url,
        knowledge=lambda q, n: [_hit("kb://doc/9", provider="knowledge")],
        on_provider_error=lambda e: errors.append(e.provider),
    )
    assert [h.url for h in hits] == ["kb://doc/9"]
    assert errors == ["searxng"]


def test_failing_knowledge_is_reported(test_site):
    errors = []

    def kb(query, limit):
        raise RuntimeError("index missing")

    hits = web_search(
        "solar",
        providers=["searxng", "knowledge"],
        searxng_url=test_site.url,
        knowledge=kb,
        on_provider_error=lambda e: errors.append((e.provider, e.message)),
    )
    assert hits
    assert errors == [("knowledge", "RuntimeError: index missing")]


def test_duckduckgo_provider_maps_results(monkeypatch):
    import ddgs

    class FakeDDGS:
        def __init__(self, timeout=None):
            pass

        def text(self, query, region, max_results):
            assert region == "cn-zh"
            return [
                {"title": "A", "href": "https://a.example/x", "body": "alpha"},
                {"title": "bad", "href": "javascript:alert(1)", "body": ""},
            ]

    monkeypatch.setattr(ddgs, "DDGS", FakeDDGS)
    hits = web_search("光伏", providers=["duckduckgo"])
    expected = [("A", "https://a.example/x", "alpha", "duckduckgo")]
    assert [(h.title, h.url, h.snippet, h.provider) for h in hits] == expected


def test_normalize_url():
    base = "https://example.com/a/b"
    for variant in [
        "HTTPS://Example.COM/a/b/",
        "https://example.com/a/b#section",
        "https://example.com:443/a/b",
        "https://example.com/a/b?utm_source=x&utm_medium=y",
        "https://example.com./a/b?fbclid=123",
    ]:
        assert normalize_url(variant) == normalize_url(base), variant
    assert normalize_url("https://example.com/a/b?id=1") != normalize_url(base)
    assert normalize_url("https://example.com/A/b") != normalize_url(base)  # paths are case-sensitive
    assert normalize_url("https://example.com/a/b?x=1&utm_campaign=z") == normalize_url("https://example.com/a/b?x=1")


def test_dedupe_keeps_first():
    hits = [_hit("https://e.com/x", "first"), _hit("https://E.com/x/#top", "second"), _hit("https://e.com/y", "third")]
    assert [h.title for h in dedupe(hits)] == ["first", "third"]


def test_searxng_http_error_is_reported(test_site):
    with pytest.raises(SearchError, match="searxng: HTTPStatusError: Server error '500"):
        web_search("q", providers=["searxng"], searxng_url=f"{test_site.url}/status/500")


def test_searxng_skips_non_http_urls(monkeypatch):
    def fake_get(url, params, timeout, headers, **_):
        return httpx.Response(
            200,
            json={"results": [{"title": "ok", "url": "https://ok.example/"}, {"title": "x", "url": "file:///etc/passwd"}]},
            request=httpx.Request("GET", url),
        )

    monkeypatch.setattr(httpx, "get", fake_get)
    hits = web_search("q", providers=["searxng"], searxng_url="http://searx.invalid")
    assert [h.url for h in hits] == ["https://ok.example/"]
