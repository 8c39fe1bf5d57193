"""DuckDuckGo through the `ddgs` library (no key)."""

from __future__ import annotations

from research import scripts
from research.agents.types import SearchHit
from research.tools.search.base import ProviderOptions, SearchProvider, http_url, register
from research.tools.search.errors import ProviderError, ProviderErrorKind


@register
class DuckDuckGo(SearchProvider):
    name = "duckduckgo"
    label = "DuckDuckGo"

    def search(self, query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
        from ddgs import DDGS
        from ddgs.exceptions import RatelimitException, TimeoutException

        region = "cn-zh" if scripts.has_common_han(query) else "us-en"
        try:
            rows = DDGS(timeout=int(max(1, opts.timeout))).text(query, region=region, max_results=max_results)
        except TimeoutException as exc:  # ddgs wraps its HTTP client's errors in its own
            raise ProviderError(f"{type(exc).__name__}: {exc}", kind=ProviderErrorKind.TIMEOUT) from exc
        except RatelimitException as exc:
            raise ProviderError(f"{type(exc).__name__}: {exc}", kind=ProviderErrorKind.QUOTA) from exc
        return [
            SearchHit(title=str(r.get("title") or r["href"]), url=r["href"], snippet=str(r.get("body") or ""),
                      provider=self.name)
            for r in rows
            if http_url(r.get("href"))
        ][:max_results]  # fmt: skip
