"""Web search: providers registered once (base.py, providers/), typed errors (errors.py), the chain (chain.py)."""

from __future__ import annotations

import research.tools.search.providers  # noqa: F401  registers every provider module
from research.tools.search.base import (
    DEFAULT_PROVIDER_TIMEOUT_S,
    KNOWLEDGE,
    PROVIDERS,
    ProviderOptions,
    SearchProvider,
    provider_label,
    register,
)
from research.tools.search.chain import dedupe, normalize_url, provider_error, web_search
from research.tools.search.errors import ProviderError, ProviderErrorKind, ProviderSkipped, SearchError

__all__ = [
    "DEFAULT_PROVIDER_TIMEOUT_S", "KNOWLEDGE", "PROVIDERS", "ProviderError", "ProviderErrorKind", "ProviderOptions",
    "ProviderSkipped", "SearchError", "SearchProvider", "dedupe", "normalize_url", "provider_error", "provider_label",
    "register", "web_search",
]
