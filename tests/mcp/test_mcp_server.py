"""The MCP server driven by the official SDK's own client, over stdio and streamable HTTP, against a real
worker and Redis."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from research import runtime
from research.api import services as token_services
from research.jobs.models import JobStatus, ResearchJob
from tests.support.procs import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data.get("result", data) if set(data) == {"result"} else data


async def _stdio_session(env: dict[str, str], user: str) -> tuple[dict[str, Any], dict[str, Any], Any, list[str]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--transport", "stdio", "--user", user, "--no-infra",
              "--base-url", "http://testserver.example"],
        env=env, cwd=str(ROOT),
    )
    async with Client(params, read_timeout_seconds=240) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        done = await client.call_tool("deep_research", {
            "question": "How have solar power costs changed?",
            "options": {"engine": "offline", "max_steps": 2, "outputs": ["md"]},
        })
        job = _structured(done)
        read = _structured(await client.call_tool("get_job", {"job_id": job["job"]}))
        missing = await client.call_tool("get_job", {"job_id": 999_999})
        return job, read, missing, tools


def test_stdio_deep_research_returns_the_report_and_file_links(alice, worker, stack_env, live_settings):
    job, read, missing, tools = asyncio.run(_stdio_session(stack_env, "alice"))
    assert tools == ["deep_research", "get_job"]
    assert job["status"] == JobStatus.DONE, job
    db_job = ResearchJob.objects.get(pk=job["job"])
    assert db_job.owner == alice
    assert job["report"] == db_job.report_versions.latest("number").markdown
    assert "## References" in job["report"] and job["sources"]
    md = next(f for f in job["files"] if f["kind"] == "md")
    assert md["api_url"] == f"http://testserver.example/api/v1/jobs/{db_job.pk}/files/report.md"
    assert Path(md["path"]).read_text() == job["report"]
    assert read["job"] == job["job"] and read["report"] == job["report"]
    assert missing.is_error and "No job 999999" in str(missing.content)


def test_stdio_refuses_an_unknown_user(stack_env):
    proc = subprocess.run([sys.executable, "manage.py", "mcp_server", "--user", "nobody-here", "--no-infra"],
                          cwd=ROOT, env=stack_env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0 and "no active user named 'nobody-here'" in proc.stderr


@pytest.fixture
def mcp_http(stack_env) -> Any:
    port = runtime.free_port()
    log = Path(stack_env["TEST_RUN_DIR"]) / f"mcp-http-{port}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "mcp_server", "--transport", "http", "--port",
                                 str(port), "--base-url", "http://testserver.example"],
                                cwd=ROOT, env=stack_env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise RuntimeError(log.read_text()) from None
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


async def _http_session(url: str, secret: str, job_id: int | None) -> tuple[dict[str, Any] | None, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=240) as http:
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=240) as client:
            if job_id is not None:
                return None, await client.call_tool("get_job", {"job_id": job_id})
            done = await client.call_tool("deep_research", {
                "question": "Why are heat pumps efficient?",
                "options": {"engine": "offline", "max_steps": 2, "outputs": ["md"]},
            })
            return _structured(done), None


def test_http_acts_as_the_tokens_owner_and_refuses_others(alice, charlie, worker, mcp_http, live_settings):
    _, secret = token_services.token_create(user=alice, name="mcp")
    _, outsider = token_services.token_create(user=charlie, name="mcp")
    job, _ = asyncio.run(_http_session(mcp_http, secret, None))
    assert job is not None and job["status"] == JobStatus.DONE
    assert ResearchJob.objects.get(pk=job["job"]).owner == alice
    _, refused = asyncio.run(_http_session(mcp_http, outsider, job["job"]))
    assert refused.is_error and f"No job {job['job']}" in str(refused.content)
    # No token: the SDK's bearer middleware answers 401 before any tool runs.
    response = httpx.post(mcp_http, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
