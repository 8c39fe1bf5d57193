"""Build the app's LLM client from Django settings; probe a model server.

Django is imported inside ``client_from_settings`` only, so ``research.llm`` stays
importable from plain scripts.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from research.llm.client import LLMClient
from research.llm.transport import is_local_url
from research.llm.types import CallRecord


def client_from_settings(*, on_call: Callable[[CallRecord], None] | None = None, reasoning: bool = False) -> LLMClient:
    """An LLMClient for ``settings.LLM_*``; ``reasoning=True`` picks LLM_REASONING_MODEL
    when one is configured (else the main model)."""
    from django.conf import settings

    model = str(getattr(settings, "LLM_MODEL", "") or "")
    reasoning_model = str(getattr(settings, "LLM_REASONING_MODEL", "") or "")
    if reasoning and reasoning_model:
        model = reasoning_model
    window = int(getattr(settings, "LLM_CONTEXT_WINDOW", 0) or 0)
    return LLMClient(
        base_url=str(getattr(settings, "LLM_BASE_URL", "http://127.0.0.1:8001/v1")),
        model=model,
        api_key=str(getattr(settings, "LLM_API_KEY", "") or "EMPTY"),
        profile=str(getattr(settings, "LLM_PROFILE", "qwen3") or "qwen3"),
        timeout=float(getattr(settings, "LLM_TIMEOUT_S", 120.0)),
        max_retries=int(getattr(settings, "LLM_MAX_RETRIES", 5)),
        context_window=window or None,  # 0 = ask the server
        on_call=on_call,
    )


def server_available(base_url: str, timeout: float = 2.0, *, api_key: str | None = None) -> bool:
    """True when ``GET {base_url}/models`` answers 200 (the server is up and serving)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = f"{base_url.rstrip('/')}/models"
    try:
        resp = httpx.get(url, timeout=timeout, headers=headers, trust_env=not is_local_url(base_url))
    except httpx.HTTPError:
        return False
    return resp.status_code == 200
