"""SearXNG's JSON API (`SEARXNG_URL`; docker-compose runs one)."""

from __future__ import annotations

import httpx

from research.agents.types import SearchHit
from research.tls import tls_context
from research.tools.search.base import ProviderOptions, SearchProvider, http_url, register
from research.tools.search.errors import ProviderSkipped


@register
class SearXNG(SearchProvider):
    name = "searxng"
    label = "SearXNG"

    def search(self, query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
        """Its URL is an operator setting, so it may well be on loopback (docker-compose): plain httpx, not
        the SSRF-guarded fetch_url."""
        url = str(opts.setting("SEARXNG_URL", "") or "")
        if not url:
            raise ProviderSkipped("skipped: SEARXNG_URL is not set")
        resp = httpx.get(
            url.rstrip("/") + "/search",
            params={"q": query, "format": "json"},
            timeout=opts.timeout,
            headers={"Accept": "application/json"},
            verify=tls_context(),
        )
        resp.raise_for_status()
        data = resp.json()
        hits = []
        for item in data.get("results") or []:
            if http_url(item.get("url")):
                hits.append(
                    SearchHit(
                        title=str(item.get("title") or item["url"]),
                        url=item["url"],
                        snippet=str(item.get("content") or ""),
                        provider=self.name,
                    )
                )
        return hits[:max_results]
