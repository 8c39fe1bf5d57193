"""Typed search errors: a provider's failure carries its name, a kind and a message, never a string to parse.

The chain (chain.py) turns whatever a provider raised into a `ProviderError`; the job's events and the job
page's failure text (research/jobs/web/failures.py) read its fields.
"""

from __future__ import annotations

import socket
from enum import StrEnum
from typing import Any

from research.tools.search.base import provider_label


class ProviderErrorKind(StrEnum):
    REFUSED = "refused"  # the host refused the connection
    UNRESOLVED = "unresolved"  # the host name did not resolve
    UNREACHABLE = "unreachable"  # another connection failure (no route, reset, TLS)
    TIMEOUT = "timeout"
    HTTP_STATUS = "http_status"  # an HTTP error status (`status`)
    QUOTA = "quota"  # rate limit or plan quota spent (HTTP 429, a provider's own codes)
    PARSE = "parse"  # an answer the provider's code could not read
    NOT_CONFIGURED = "not_configured"  # no URL / API key: skipped
    UNKNOWN_PROVIDER = "unknown_provider"  # a name in SEARCH_PROVIDERS that no module registered
    FAILED = "failed"  # anything else (a provider's bug)


class ProviderError(Exception):
    """One provider's failure. `str()` is the message; `provider` is filled in by the chain if left empty."""

    def __init__(self, message: str, *, kind: ProviderErrorKind = ProviderErrorKind.FAILED, provider: str = "",
                 status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = ProviderErrorKind(kind)
        self.provider = provider
        self.status = status

    def as_dict(self) -> dict[str, Any]:
        """For event payloads: provider, its label, kind, HTTP status, message."""
        return {"provider": self.provider, "label": provider_label(self.provider), "kind": str(self.kind),
                "status": self.status, "message": self.message}


class ProviderSkipped(ProviderError):
    """A provider can't run here (e.g. no API key). Reported like a failure."""

    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message, kind=ProviderErrorKind.NOT_CONFIGURED, provider=provider)


class SearchError(Exception):
    """Every provider failed; `errors` holds each one's ProviderError, in the order tried."""

    def __init__(self, errors: list[ProviderError]) -> None:
        self.errors = errors
        detail = "; ".join(f"{e.provider}: {e.message}" for e in errors) or "no search provider configured"
        super().__init__(f"search failed: {detail}")

    @property
    def reasons(self) -> list[tuple[str, str]]:
        """(provider, message) pairs."""
        return [(e.provider, e.message) for e in self.errors]


def connection_kind(exc: BaseException) -> ProviderErrorKind:
    """Refused, unresolved or otherwise unreachable, from the OS error under an HTTP client's exception."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return ProviderErrorKind.REFUSED
        if isinstance(cause, socket.gaierror):
            return ProviderErrorKind.UNRESOLVED
        cause = cause.__cause__ or cause.__context__
    return ProviderErrorKind.UNREACHABLE
