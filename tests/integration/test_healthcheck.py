"""The container health checks (docker-compose, Kubernetes probes) against a real daphne and a real worker."""

from __future__ import annotations

import socket
import subprocess
import sys

import httpx
import pytest

from tests.support.procs import ROOT

pytestmark = [pytest.mark.integration]


def healthcheck(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "research.healthcheck", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_web_health_check_reaches_the_database(asgi_server, stack_env):
    response = httpx.get(asgi_server.url + "/healthz", timeout=10)
    assert response.status_code == 200 and response.text == "ok\n"
    assert healthcheck(dict(stack_env, PORT=str(asgi_server.port)), "web").returncode == 0
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    assert healthcheck(dict(stack_env, PORT=str(port)), "web").returncode == 1  # nothing listens there


def test_worker_health_check_pings_that_worker(worker, stack_env):
    name = f"{worker.name}@{socket.gethostname()}"
    assert healthcheck(stack_env, "worker", name).returncode == 0
    assert healthcheck(stack_env, "worker", f"nobody@{socket.gethostname()}").returncode == 1
    assert healthcheck(stack_env, "nonsense").returncode == 2
