"""Web search over a chain of providers (docs/architecture.md, "Tools").

`SEARCH_PROVIDERS` is an ordered list, e.g. ["searxng", "duckduckgo", "knowledge"].
Web providers form a fallback chain: they are tried in order and the first one
that answers with results wins; one that raises or times out is reported
through `on_provider_error(name, message)` and the next one is tried.
`knowledge` (the user's knowledge base, passed in as a callable) is not part of
the chain: when listed and given, its hits are always merged in.

Providers live in the `PROVIDERS` registry (name -> function), so deployments
and tests can add or replace one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from billiard.exceptions import SoftTimeLimitExceeded

from research import scripts
from research.agents.types import SearchHit
from research.tls import tls_context
from research.tools.config import setting

KNOWLEDGE = "knowledge"
DEFAULT_PROVIDER_TIMEOUT_S = 15.0
TAVILY_API_URL = "https://api.tavily.com/search"
_TRACKING_PARAMS = {"fbclid", "gclid", "msclkid", "mc_cid", "mc_eid"}


class SearchError(Exception):
    """Every provider failed; `reasons` holds (provider, message) pairs."""

    def __init__(self, reasons: list[tuple[str, str]]) -> None:
        self.reasons = reasons
        detail = "; ".join(f"{name}: {msg}" for name, msg in reasons) or "no search provider configured"
        super().__init__(f"search failed: {detail}")


class ProviderSkipped(Exception):
    """A provider can't run here (e.g. no API key). Reported like a failure."""


@dataclass(frozen=True)
class ProviderOptions:
    searxng_url: str
    tavily_api_key: str
    tavily_api_url: str = TAVILY_API_URL
    timeout: float = DEFAULT_PROVIDER_TIMEOUT_S


Provider = Callable[[str, int, ProviderOptions], list[SearchHit]]




def _http_url(url: Any) -> bool:
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))


# --- providers ---------------------------------------------------------------------


def searxng_search(query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
    """SearXNG's JSON API. Its URL is an operator setting, so it may well be on
    loopback (docker-compose): plain httpx, not the SSRF-guarded fetch_url."""
    if not opts.searxng_url:
        raise ProviderSkipped("SEARXNG_URL is not set")
    resp = httpx.get(
        opts.searxng_url.rstrip("/") + "/search",
        params={"q": query, "format": "json"},
        timeout=opts.timeout,
        headers={"Accept": "application/json"},
        verify=tls_context(),
    )
    resp.raise_for_status()
    data = resp.json()
    hits = []
    for item in data.get("results") or []:
        if _http_url(item.get("url")):
            hits.append(
                SearchHit(
                    title=str(item.get("title") or item["url"]),
                    url=item["url"],
                    snippet=str(item.get("content") or ""),
                    provider="searxng",
                )
            )
    return hits[:max_results]


def duckduckgo_search(query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
    from ddgs import DDGS

    region = "cn-zh" if scripts.has_common_han(query) else "us-en"
    rows = DDGS(timeout=int(max(1, opts.timeout))).text(query, region=region, max_results=max_results)
    return [
        SearchHit(title=str(r.get("title") or r["href"]), url=r["href"], snippet=str(r.get("body") or ""),
                  provider="duckduckgo")
        for r in rows
        if _http_url(r.get("href"))
    ][:max_results]  # fmt: skip


def tavily_search(query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
    if not opts.tavily_api_key:
        raise ProviderSkipped("TAVILY_API_KEY is not set")
    resp = httpx.post(
        opts.tavily_api_url,
        json={"query": query, "max_results": max_results, "search_depth": "basic"},
        headers={"Authorization": f"Bearer {opts.tavily_api_key}"},
        timeout=opts.timeout,
        verify=tls_context(),
    )
    resp.raise_for_status()
    return [
        SearchHit(title=str(r.get("title") or r["url"]), url=r["url"], snippet=str(r.get("content") or ""),
                  provider="tavily")
        for r in resp.json().get("results") or []
        if _http_url(r.get("url"))
    ][:max_results]  # fmt: skip


PROVIDERS: dict[str, Provider] = {
    "searxng": searxng_search,
    "duckduckgo": duckduckgo_search,
    "tavily": tavily_search,
}


# --- de-duplication ---------------------------------------------------------------


def normalize_url(url: str) -> str:
    """A key under which trivially different spellings of one URL collide:
    scheme/host case, default port, trailing slash, fragment, utm_* and click ids."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return url.strip()
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if port and not ((scheme == "http" and port == 80) or (scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not k.lower().startswith("utm_") and k.lower() not in _TRACKING_PARAMS
        ]
    )
    return urlunsplit((scheme, host, path, query, ""))


def dedupe(hits: list[SearchHit]) -> list[SearchHit]:
    seen: set[str] = set()
    out = []
    for hit in hits:
        key = normalize_url(hit.url)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


# --- the chain ----------------------------------------------------------------------


def web_search(
    query: str,
    *,
    providers: list[str] | None = None,
    max_results: int = 8,
    knowledge: Callable[[str, int], list[SearchHit]] | None = None,
    on_provider_error: Callable[[str, str], None] | None = None,
    searxng_url: str | None = None,
    tavily_api_key: str | None = None,
    timeout: float = DEFAULT_PROVIDER_TIMEOUT_S,
) -> list[SearchHit]:
    """Search the web (first provider with results wins) plus the knowledge base.

    Returns at most `max_results` web hits followed by at most `max_results`
    knowledge hits, de-duplicated by normalized URL. Raises SearchError when no
    provider answered at all (each raised, timed out or was skipped); an empty
    answer is not a failure.
    """
    names = list(providers if providers is not None else setting("SEARCH_PROVIDERS", ["duckduckgo"]))
    opts = ProviderOptions(
        searxng_url=searxng_url if searxng_url is not None else str(setting("SEARXNG_URL", "") or ""),
        tavily_api_key=tavily_api_key if tavily_api_key is not None else str(setting("TAVILY_API_KEY", "") or ""),
        tavily_api_url=str(setting("TAVILY_API_URL", TAVILY_API_URL)),
        timeout=timeout,
    )
    failures: list[tuple[str, str]] = []
    answered = False

    def failed(name: str, message: str) -> None:
        failures.append((name, message))
        if on_provider_error is not None:
            on_provider_error(name, message)

    web_hits: list[SearchHit] = []
    for name in names:
        if name == KNOWLEDGE:
            continue
        provider = PROVIDERS.get(name)
        if provider is None:
            failed(name, f"unknown search provider {name!r}")
            continue
        try:
            hits = provider(query, max_results, opts)
        except ProviderSkipped as exc:
            failed(name, f"skipped: {exc}")
            continue
        except httpx.TimeoutException:
            failed(name, f"timed out after {timeout:g} s")
            continue
        except SoftTimeLimitExceeded:  # the task's time is up: stop, don't try the next provider
            raise
        except Exception as exc:  # any provider bug or network error must not end the search
            failed(name, f"{type(exc).__name__}: {exc}".strip())
            continue
        answered = True
        for hit in hits:
            hit.provider = hit.provider or name
        web_hits = dedupe(hits)[:max_results]
        if web_hits:
            break

    kb_hits: list[SearchHit] = []
    if KNOWLEDGE in names and knowledge is not None:
        try:
            kb_hits = list(knowledge(query, max_results))[:max_results]
            answered = True
        except Exception as exc:  # the knowledge base is optional: report and go on
            failed(KNOWLEDGE, f"{type(exc).__name__}: {exc}")
        for hit in kb_hits:
            hit.provider = hit.provider or KNOWLEDGE

    if not answered:
        raise SearchError(failures)
    return dedupe(web_hits + kb_hits)
