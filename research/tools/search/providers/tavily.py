"""Tavily's search API (`TAVILY_API_KEY`; `TAVILY_API_URL` for tests)."""

from __future__ import annotations

import httpx

from research.agents.types import SearchHit
from research.tls import tls_context
from research.tools.search.base import ProviderOptions, SearchProvider, http_url, register
from research.tools.search.errors import ProviderError, ProviderErrorKind, ProviderSkipped

TAVILY_API_URL = "https://api.tavily.com/search"
QUOTA_STATUSES = (429, 432, 433)  # Tavily: rate limit, plan limit, pay-as-you-go limit


@register
class Tavily(SearchProvider):
    name = "tavily"
    label = "Tavily"

    def search(self, query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
        key = str(opts.setting("TAVILY_API_KEY", "") or "")
        if not key:
            raise ProviderSkipped("skipped: TAVILY_API_KEY is not set")
        resp = httpx.post(
            str(opts.setting("TAVILY_API_URL", TAVILY_API_URL)),
            json={"query": query, "max_results": max_results, "search_depth": "basic"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=opts.timeout,
            verify=tls_context(),
        )
        try:
            resp.raise_for_status()
        except httpx.HTTPStatusError as exc:
            if resp.status_code in QUOTA_STATUSES:
                raise ProviderError(f"{type(exc).__name__}: {exc}", kind=ProviderErrorKind.QUOTA,
                                    status=resp.status_code) from exc
            raise
        return [
            SearchHit(title=str(r.get("title") or r["url"]), url=r["url"], snippet=str(r.get("content") or ""),
                      provider=self.name)
            for r in resp.json().get("results") or []
            if http_url(r.get("url"))
        ][:max_results]  # fmt: skip
