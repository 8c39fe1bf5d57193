"""Web search over a chain of providers (docs/architecture.md, "Tools").

`SEARCH_PROVIDERS` is an ordered list, e.g. ["searxng", "duckduckgo", "knowledge"].
Web providers form a fallback chain: they are tried in order and the first one
that answers with results wins; one that raises or times out is reported
through `on_provider_error(ProviderError)` and the next one is tried.
`knowledge` (the user's knowledge base, passed in as a callable) is not part of
the chain: when listed and given, its hits are always merged in.

Providers are classes registered once (base.py, providers/); their failures reach
the caller as typed `ProviderError`s (errors.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
from billiard.exceptions import SoftTimeLimitExceeded

from research.agents.types import SearchHit
from research.tools.config import setting
from research.tools.search.base import DEFAULT_PROVIDER_TIMEOUT_S, KNOWLEDGE, PROVIDERS, ProviderOptions
from research.tools.search.errors import ProviderError, ProviderErrorKind, SearchError, connection_kind

_TRACKING_PARAMS = {"fbclid", "gclid", "msclkid", "mc_cid", "mc_eid"}


def provider_error(name: str, exc: BaseException, *, timeout: float) -> ProviderError:
    """What a provider raised, as a ProviderError of the right kind (the provider's own, if it raised one)."""
    if isinstance(exc, ProviderError):
        exc.provider = exc.provider or name
        return exc
    message = f"{type(exc).__name__}: {exc}".strip()
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(f"timed out after {timeout:g} s", kind=ProviderErrorKind.TIMEOUT, provider=name)
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        kind = ProviderErrorKind.QUOTA if status == 429 else ProviderErrorKind.HTTP_STATUS
        return ProviderError(message, kind=kind, provider=name, status=status)
    if isinstance(exc, httpx.TransportError | OSError):
        return ProviderError(message, kind=connection_kind(exc), provider=name)
    if isinstance(exc, json.JSONDecodeError | KeyError | TypeError | AttributeError):
        return ProviderError(message, kind=ProviderErrorKind.PARSE, provider=name)  # an answer not as expected
    return ProviderError(message, provider=name)


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
    on_provider_error: Callable[[ProviderError], None] | None = None,
    settings: Mapping[str, Any] | None = None,
    searxng_url: str | None = None,
    tavily_api_key: str | None = None,
    timeout: float = DEFAULT_PROVIDER_TIMEOUT_S,
) -> list[SearchHit]:
    """Search the web (first provider with results wins) plus the knowledge base.

    Returns at most `max_results` web hits followed by at most `max_results`
    knowledge hits, de-duplicated by normalized URL. Raises SearchError when no
    provider answered at all (each raised, timed out or was skipped); an empty
    answer is not a failure. `settings` overrides the providers' Django settings for
    this call (`searxng_url` and `tavily_api_key` are shorthands for two of them).
    """
    names = list(providers if providers is not None else setting("SEARCH_PROVIDERS", ["duckduckgo"]))
    overrides = dict(settings or {})
    if searxng_url is not None:
        overrides["SEARXNG_URL"] = searxng_url
    if tavily_api_key is not None:
        overrides["TAVILY_API_KEY"] = tavily_api_key
    opts = ProviderOptions(timeout=timeout, overrides=overrides)
    failures: list[ProviderError] = []
    answered = False

    def failed(error: ProviderError) -> None:
        failures.append(error)
        if on_provider_error is not None:
            on_provider_error(error)

    web_hits: list[SearchHit] = []
    for name in names:
        if name == KNOWLEDGE:
            continue
        provider = PROVIDERS.get(name)
        if provider is None:
            failed(ProviderError(f"unknown search provider {name!r}", kind=ProviderErrorKind.UNKNOWN_PROVIDER,
                                 provider=name))
            continue
        try:
            hits = provider.search(query, max_results, opts)
        except SoftTimeLimitExceeded:  # the task's time is up: stop, don't try the next provider
            raise
        except Exception as exc:  # any provider bug or network error must not end the search
            failed(provider_error(name, exc, timeout=timeout))
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
            failed(ProviderError(f"{type(exc).__name__}: {exc}", provider=KNOWLEDGE))
        for hit in kb_hits:
            hit.provider = hit.provider or KNOWLEDGE

    if not answered:
        raise SearchError(failures)
    return dedupe(web_hits + kb_hits)
