"""The MCP server: `deep_research` runs a whole job and returns the report and file links; `get_job` reads one.

Built on the official `mcp` SDK (MCPServer). Over stdio it acts as one user named on the command line;
over streamable HTTP every request carries an API token (`Authorization: Bearer TOKEN`, the same tokens
as the JSON API) and the tools act as that token's owner.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import Http404
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AnyHttpUrl, Field

from research.api.selectors import job_detail
from research.jobs import selectors, services, storage
from research.jobs.models import JobStatus, ResearchJob
from research.jobs.options import Bool, JobOptionsBase

POLL_S = 1.0


class ResearchOptions(JobOptionsBase):
    """The new-job form's options (research.jobs.options' shared model: what the API refuses, this refuses).
    Plans run without review unless auto_accept is false."""

    auto_accept: Bool = True
    wait_s: float = Field(default=1800.0, description="Return (with the job id) if the job has not ended by then.")


class TokenVerifier:
    """The API's own tokens, checked by the SDK's bearer middleware."""

    async def verify_token(self, token: str) -> AccessToken | None:
        from research.api.services import token_authenticate

        user = await sync_to_async(token_authenticate)(secret=token)
        if user is None:
            return None
        return AccessToken(token=token, client_id=str(user.pk), scopes=[], subject=user.username)


def _file_links(job: ResearchJob, detail: dict[str, Any], base_url: str) -> list[dict[str, Any]]:
    paths = {a.name: storage.file_location(str(a.file.name)) for a in job.artifacts.all()}  # path or s3://
    return [
        {"name": a["name"], "kind": a["kind"], "size": a["size"], "api_url": base_url + a["url"],
         "web_url": f"{base_url}/jobs/{job.pk}/files/{a['name']}", "path": paths.get(a["name"], "")}
        for a in detail["artifacts"] if a["kind"] != "figure"
    ]


def _result(job: ResearchJob, base_url: str) -> dict[str, Any]:
    detail = job_detail(job=job)
    return {
        "job": job.pk, "status": job.status, "title": job.title, "question": job.question,
        "answer": detail["answer"], "error": detail["error"],
        "report": detail["report"]["markdown"] if detail["report"] else None,
        "plan": detail["plan"], "steps": [{"id": s["id"], "title": s["title"], "status": s["status"]}
                                          for s in detail["steps"]],
        "sources": detail["sources"], "files": _file_links(job, detail, base_url),
        "web_url": base_url + detail["url"],
    }


def build_server(*, user: User | None, base_url: str, http: bool = False) -> MCPServer:
    """`user` acts for stdio; with `http` the token's owner acts and `user` must be None."""
    base_url = base_url.rstrip("/")
    kwargs: dict[str, Any] = {}
    if http:
        kwargs = {"token_verifier": TokenVerifier(),
                  "auth": AuthSettings(issuer_url=AnyHttpUrl(base_url), resource_server_url=None)}
    server = MCPServer(
        "deep-research",
        instructions=("Deep Research runs multi-step web research and writes a cited report (Markdown, and on "
                      "request PDF, PPTX slides and a podcast). Call deep_research with a question; it "
                      "returns the report and links to its files. get_job reads a job by id."),
        **kwargs,
    )

    def acting_user() -> User:
        if not http:
            assert user is not None
            return user
        token = get_access_token()
        if token is None:
            raise ToolError("Send an API token: Authorization: Bearer TOKEN.")
        found = User.objects.filter(pk=int(token.client_id), is_active=True).first()
        if found is None:
            raise ToolError("The token's user no longer exists.")
        return found

    def start(question: str, options: ResearchOptions) -> int:
        owner = acting_user()
        opts = options.model_dump(exclude={"wait_s"}, exclude_none=True)
        opts["clarify"] = False  # a tool call has nobody to answer questions
        try:
            return services.job_create(user=owner, question=question, options=opts).pk
        except ValidationError as exc:
            raise ToolError("; ".join(exc.messages)) from None
        except services.RateLimited as exc:
            raise ToolError(str(exc)) from None
        except services.CounterUnavailable as exc:
            raise ToolError(exc.message) from None
        except Http404 as exc:  # e.g. options.kb names another user's (or no) knowledge base
            kb = f" (options.kb = {opts['kb']})" if opts.get("kb") is not None else ""
            raise ToolError(f"{str(exc) or 'Not found.'}{kb}") from None

    def state(job_id: int) -> tuple[str, str]:
        status, title = ResearchJob.objects.filter(pk=job_id).values_list("status", "title").get()
        return str(status), str(title)

    def finish(job_id: int) -> dict[str, Any]:
        return _result(ResearchJob.objects.get(pk=job_id), base_url)

    @server.tool()
    async def deep_research(question: str, options: ResearchOptions | None = None) -> dict[str, Any]:
        """Research a question and write a cited report. Returns the report (Markdown), its sources and
        links to its files (pdf, pptx, podcast when requested). Takes minutes; ends early with the job
        id and status if the plan waits for review (auto_accept false) or wait_s passes."""
        options = options or ResearchOptions()
        job_id = await sync_to_async(start)(question, options)
        deadline = time.monotonic() + max(1.0, options.wait_s)
        while time.monotonic() < deadline:
            status, _title = await sync_to_async(state)(job_id)
            if status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.AWAITING_REVIEW):
                break
            await anyio.sleep(POLL_S)
        result = await sync_to_async(finish)(job_id)
        if result["status"] == JobStatus.FAILED:
            raise ToolError(f"Job {job_id} failed: {result['error']}")
        return result

    @server.tool()
    async def get_job(job_id: int) -> dict[str, Any]:
        """A job you own: status, plan, steps, report (Markdown), sources and file links."""

        def read() -> dict[str, Any]:
            try:
                job = selectors.job_get_for_user(user=acting_user(), job_id=job_id)
            except Http404:
                raise ToolError(f"No job {job_id}.") from None
            return _result(job, base_url)

        return await sync_to_async(read)()

    return server


def default_base_url() -> str:
    return str(settings.SITE_URL or "http://127.0.0.1:8000")
