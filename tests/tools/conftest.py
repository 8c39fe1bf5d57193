"""Fixtures for the research tools' tests: the offline test site and the sandbox."""

from __future__ import annotations

import socket

import pytest

from tests.support.site import TestSite


@pytest.fixture(scope="session")
def test_site():
    with TestSite() as site:
        yield site


@pytest.fixture
def closed_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class FakeDNS:
    """Maps chosen host names to chosen addresses; other names resolve normally.

    `table[name]` is a list of IPs or a callable returning one (to answer
    differently on each lookup); `calls` records every name looked up.
    """

    def __init__(self) -> None:
        self.table: dict = {}
        self.calls: list[str] = []
        self.real = socket.getaddrinfo

    def getaddrinfo(self, host, port, *args, **kwargs):
        self.calls.append(host)
        if host not in self.table:
            return self.real(host, port, *args, **kwargs)
        entry = self.table[host]
        out = []
        for ip in entry() if callable(entry) else entry:
            if ":" in ip:
                out.append((socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, port or 0, 0, 0)))
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, port or 0)))
        return out


@pytest.fixture
def fake_dns(monkeypatch) -> FakeDNS:
    dns = FakeDNS()
    monkeypatch.setattr(socket, "getaddrinfo", dns.getaddrinfo)
    return dns
