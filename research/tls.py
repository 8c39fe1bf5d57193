"""One TLS context per process, shared by every HTTP client: building one loads the CA bundle (~30 ms CPU)."""

from __future__ import annotations

import functools
import ssl

import certifi


@functools.cache
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certifi.where())
