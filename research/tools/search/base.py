"""A search provider is a class registered once: its name (in SEARCH_PROVIDERS), its label, its search.

Providers live in research/tools/search/providers/, one module each; importing that package imports
them all, so a new provider is one new module (docs/architecture.md, "Adding a search provider").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from research.agents.types import SearchHit
from research.tools.config import setting

KNOWLEDGE = "knowledge"  # the user's knowledge base: not a web provider, merged in by the chain
KNOWLEDGE_LABEL = "knowledge base"
DEFAULT_PROVIDER_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class ProviderOptions:
    """What every provider gets: the time it has, and its settings (`setting(name)`)."""

    timeout: float = DEFAULT_PROVIDER_TIMEOUT_S
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def setting(self, name: str, default: Any = "") -> Any:
        """This call's override, else the Django setting, else the environment variable (so a new
        provider's key needs no line in research/settings.py), else `default`."""
        if name in self.overrides:
            return self.overrides[name]
        return setting(name, os.environ.get(name, default))


class SearchProvider:
    """Subclass, set `name` and `label`, implement `search`, decorate with `@register`.

    `search` returns hits (an empty list is an answer, not a failure) or raises: a `ProviderError`
    (errors.py) for a failure it understands, or anything else, which the chain classifies (httpx
    timeouts, connection errors and HTTP statuses get their kinds; the rest is `failed`).
    """

    name: ClassVar[str]
    label: ClassVar[str]  # how people know it: "SearXNG"

    def search(self, query: str, max_results: int, opts: ProviderOptions) -> list[SearchHit]:
        raise NotImplementedError


PROVIDERS: dict[str, SearchProvider] = {}

P = TypeVar("P", bound=type[SearchProvider])


def register(cls: P) -> P:
    """Class decorator: make `cls.name` usable in SEARCH_PROVIDERS (a later one of the same name wins)."""
    PROVIDERS[cls.name] = cls()
    return cls


def provider_label(name: str) -> str:
    if name == KNOWLEDGE:
        return KNOWLEDGE_LABEL
    provider = PROVIDERS.get(name)
    return provider.label if provider is not None else name


def http_url(url: Any) -> bool:
    """Only http(s) results are kept: a provider's `javascript:` or `file:` link never reaches a fetch."""
    return isinstance(url, str) and url.lower().startswith(("http://", "https://"))
