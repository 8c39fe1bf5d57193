"""Where the model's context window comes from: the server's own report (vLLM ``/v1/models``,
llama.cpp ``/props``, Ollama ``/api/show``) or a context-length error that states it."""

from __future__ import annotations

import logging

import httpx

from research import textre

log = logging.getLogger(__name__)

#: Used when neither LLM_CONTEXT_WINDOW nor the server says: small enough for the usual
#: local-server defaults (llama-cpp-python 2048 is learned from its first error).
DEFAULT_CONTEXT_WINDOW = 8192


def discover_window(http: httpx.Client, *, base_url: str, model: str, timeout: float) -> tuple[int, str] | None:
    """(window, where it came from); the safe default when the server does not say; None when the
    server cannot be reached (ask again next time)."""
    timeout = min(timeout, 10.0)
    try:
        resp = http.get(f"{base_url}/models", timeout=timeout)
    except httpx.HTTPError as e:
        log.info("context window: GET /models failed (%s); assuming %d for now", e, DEFAULT_CONTEXT_WINDOW)
        return None
    window = window_from_models(resp, model) if resp.status_code == 200 else None
    if window:
        return window, "server /v1/models max_model_len"
    root = textre.sub(r"/v1$", "", base_url)
    for probe in (_window_from_props, _window_from_ollama):
        try:
            found = probe(http, root, model, timeout)
        except (httpx.HTTPError, ValueError, TypeError, AttributeError):
            found = None
        if found:
            return found
    return DEFAULT_CONTEXT_WINDOW, "safe default (the server does not say; set LLM_CONTEXT_WINDOW)"


def window_from_models(resp: httpx.Response, model: str) -> int | None:
    """vLLM's ``max_model_len`` (or a look-alike key) from ``GET /v1/models``."""
    try:
        data = resp.json().get("data") or []
    except (ValueError, AttributeError):
        return None
    entries = [d for d in data if isinstance(d, dict)]
    entries.sort(key=lambda d: d.get("id") != model)  # our model first, if listed
    for entry in entries:
        for key in ("max_model_len", "context_length", "context_window", "max_context_length", "n_ctx"):
            value = entry.get(key)
            if isinstance(value, int) and value > 0:
                return value
        meta = entry.get("meta")  # llama.cpp's server: {"meta": {"n_ctx_train": …}}
        if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int) and meta["n_ctx"] > 0:
            return int(meta["n_ctx"])
    return None


def _window_from_props(http: httpx.Client, root: str, model: str, timeout: float) -> tuple[int, str] | None:
    """llama.cpp's own server: ``GET /props`` → default_generation_settings.n_ctx."""
    resp = http.get(f"{root}/props", timeout=timeout)
    if resp.status_code != 200:
        return None
    data = resp.json()
    settings = data.get("default_generation_settings") or {}
    for value in (settings.get("n_ctx"), data.get("n_ctx")):
        if isinstance(value, int) and value > 0:
            return value, "server /props n_ctx"
    return None


def _window_from_ollama(http: httpx.Client, root: str, model: str, timeout: float) -> tuple[int, str] | None:
    """Ollama: ``POST /api/show`` → the num_ctx parameter it runs with, else the
    model's trained ``*.context_length``."""
    resp = http.post(f"{root}/api/show", json={"model": model}, timeout=timeout)
    if resp.status_code != 200:
        return None
    data = resp.json()
    m = textre.search(r"^\s*num_ctx\s+(\d+)", str(data.get("parameters") or ""), textre.MULTILINE)
    if m and int(m.group(1)) > 0:
        return int(m.group(1)), "server /api/show num_ctx"
    for key, value in (data.get("model_info") or {}).items():
        if str(key).endswith(".context_length") and isinstance(value, int) and value > 0:
            return value, "server /api/show context_length"
    return None


def window_in_error(message: str) -> int | None:
    """The window a context-length error states (llama.cpp: "exceed context window of 2048";
    vLLM: "maximum context length is 4096"), if it states one."""
    m = textre.search(r"context window of (\d+)|maximum context length is (\d+)", message)
    return int(m.group(1) or m.group(2)) if m else None
