"""The AgentContext the agents see, implemented over the database and the tools."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from functools import cached_property
from pathlib import Path
from typing import Any

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from research.agents.types import (
    BudgetExceeded,
    ChatModel,
    CodeRun,
    JobCancelled,
    McpToolSpec,
    SearchHit,
    SourceRef,
    ToolError,
)
from research.jobs.events import event_emit
from research.jobs.locks import job_lock, job_number_next
from research.jobs.models import LLMCall, ResearchJob, Source
from research.jobs.units.lease import LeaseLost, lease_current

logger = logging.getLogger(__name__)

MAX_SOURCE_CHARS = 200_000


MCP_LIST_TTL_S = 300.0
MCP_FAILURE_TTL_S = 30.0
_mcp_cache: dict[str, tuple[float, list[McpToolSpec]]] = {}
_mcp_cache_lock = threading.Lock()


def mcp_server_tools(server: str) -> list[McpToolSpec]:
    """Tools of one MCP server, cached per process: listing opens a session (often a subprocess),
    which parallel steps should not repeat for every step. A server that fails to list offers no tools."""
    now = time.monotonic()
    with _mcp_cache_lock:
        cached = _mcp_cache.get(server)
        if cached and cached[0] > now:
            return cached[1]
    try:
        from research.tools.mcp_client import mcp_list_server_tools

        specs = [McpToolSpec(server, t.name, t.description, t.input_schema) for t in mcp_list_server_tools(server)]
        expires = now + MCP_LIST_TTL_S
    except Exception:  # an unreachable or misconfigured MCP server only removes its tools
        logger.warning("could not list the tools of MCP server %r", server, exc_info=True)
        specs, expires = [], now + MCP_FAILURE_TTL_S
    with _mcp_cache_lock:
        _mcp_cache[server] = (expires, specs)
    return specs


def _source_ref(src: Source) -> SourceRef:
    return SourceRef(number=src.number, url=src.url, title=src.title, text=src.text, kind=src.kind)


class JobContext:
    """One per stage or step run. Implements research.agents.types.AgentContext."""

    def __init__(self, job: ResearchJob, *, step_id: str | None = None, run: int | None = None) -> None:
        self.job = job
        self.job_id = job.pk
        self.question = job.question
        self.locale = job.locale
        self.step_id = step_id
        self.run = run  # heavy mode: which of the step's parallel runs this is (its events carry it)
        self.started = time.monotonic()
        self.options: dict[str, Any] = {
            **job.options,
            "max_rounds": settings.STEP_MAX_ROUNDS,
            "step_token_budget": settings.STEP_TOKEN_BUDGET,
            "step_time_budget_s": settings.STEP_TIME_BUDGET_S,
            "kb": job.options.get("kb"),
            "mcp_tools": [s.get("name") for s in settings.MCP_SERVERS] if settings.MCP_SERVERS else [],
        }

    # --- model -------------------------------------------------------------------------
    @cached_property
    def llm(self) -> ChatModel | None:
        if self.job.engine != "llm":
            return None
        from research.llm.factory import client_from_settings

        return client_from_settings(on_call=self._record_call)

    def _record_call(self, record: Any) -> None:
        LLMCall.objects.create(
            job_id=self.job_id, step_id=self.step_id or "", run=self.run, agent=record.agent or "",
            model=record.model or "",
            prompt_tokens=record.prompt_tokens, completion_tokens=record.completion_tokens,
            seconds=record.seconds, ok=record.ok, error=(record.error or "")[:2000],
        )
        ResearchJob.objects.filter(pk=self.job_id).update(
            prompt_tokens=F("prompt_tokens") + record.prompt_tokens,
            completion_tokens=F("completion_tokens") + record.completion_tokens,
            llm_seconds=F("llm_seconds") + record.seconds,
        )

    # --- events and control -----------------------------------------------------------------
    def emit(self, type: str, payload: dict[str, Any]) -> None:
        if self.step_id and "step" not in payload:
            payload = {"step": self.step_id, **payload}
        if self.run is not None and "run" not in payload:
            payload = {**payload, "run": self.run}
        event_emit(job_id=self.job_id, type=type, payload=payload)

    def check_cancelled(self) -> None:
        soft_limit = settings.CELERY_TASK_SOFT_TIME_LIMIT
        if soft_limit and time.monotonic() - self.started > soft_limit:
            # Celery raises SoftTimeLimitExceeded asynchronously; when it lands inside a tool whose errors are
            # reported to the model, it is swallowed. Re-raise it here so the unit stops at this checkpoint
            # with "ran over its time limit" instead of running on until the hard limit kills the process.
            raise SoftTimeLimitExceeded(f"ran over its time limit ({soft_limit} s)")
        lease = lease_current()
        if lease is not None and lease.lost.is_set():
            # Another worker took this unit over (this one was too slow to renew): stop, it writes nothing.
            raise LeaseLost(f"the lease on {lease.model.__name__} {lease.pk} passed to another worker")
        row = ResearchJob.objects.filter(pk=self.job_id).values(
            "cancel_requested", "prompt_tokens", "completion_tokens", "started_at"
        ).first()
        if row is None or row["cancel_requested"]:
            raise JobCancelled("The job was cancelled.")
        if row["prompt_tokens"] + row["completion_tokens"] > settings.JOB_TOKEN_BUDGET:
            raise BudgetExceeded(f"The job used more than its token budget ({settings.JOB_TOKEN_BUDGET}).")
        started = row["started_at"]
        if started and (timezone.now() - started).total_seconds() > settings.JOB_WALL_TIME_S:
            raise BudgetExceeded(f"The job ran longer than its wall-time budget ({settings.JOB_WALL_TIME_S} s).")

    # --- tools ---------------------------------------------------------------------------------
    def search(self, query: str, *, max_results: int = 8) -> list[SearchHit]:
        from research.tools.search import ProviderError, web_search

        self.emit("step.activity", {"kind": "search", "query": query})
        providers = list(settings.SEARCH_PROVIDERS)
        kb_id = self.job.options.get("kb")
        if kb_id and "knowledge" not in providers:
            providers.append("knowledge")  # a knowledge base the user attached is searched whatever the list says
        if not self.job.options.get("web", True):
            providers = [p for p in providers if p == "knowledge"]
            if not providers:
                return []

        def knowledge(q: str, limit: int) -> list[SearchHit]:
            return [SearchHit(s.title, s.url, s.text[:300], "knowledge") for s in self.kb_search(q, limit=limit)]

        def on_error(error: ProviderError) -> None:
            # The error's fields travel as they are (the page and failures.py read them, never parse text).
            fields = error.as_dict()
            self.emit("step.activity", {"kind": "provider_error", "provider": error.provider, "label": fields["label"],
                                        "error_kind": fields["kind"], "status": error.status,
                                        "error": error.message[:500]})

        try:
            hits = web_search(query, providers=providers, max_results=max_results,
                              knowledge=knowledge if kb_id else None, on_provider_error=on_error)
        except Exception as exc:
            raise ToolError(f"search failed: {exc}") from exc
        self.emit("step.activity", {"kind": "search_results", "query": query, "count": len(hits),
                                    "urls": [h.url for h in hits[:10]]})
        return hits

    def fetch(self, url: str) -> SourceRef:
        existing = Source.objects.filter(job_id=self.job_id, url=url).first()
        if existing is not None:  # each job fetches a URL once
            # Another step fetched it: this step still read it, and its card lists it (steps run in parallel,
            # so without this a step that quotes three pages could list none).
            if not url.startswith("kb://"):
                self.emit("step.activity", {"kind": "fetch", "url": url})
            return _source_ref(existing)
        if url.startswith("kb://"):
            raise ToolError(f"{url} is a knowledge-base chunk; use knowledge search to read it")
        from research.tools.fetch import FetchError, fetch_url

        self.emit("step.activity", {"kind": "fetch", "url": url})
        try:
            page = fetch_url(url)
        except FetchError as exc:
            self.emit("step.activity", {"kind": "fetch_failed", "url": url, "error": str(exc)[:500]})
            raise ToolError(f"could not fetch {url}: {exc}") from exc
        text = (page.markdown or page.text or "")[:MAX_SOURCE_CHARS]
        if not text.strip():
            raise ToolError(f"{url} has no readable text")
        return self._register(url=url, title=page.title or url, text=text, kind="web")

    def kb_search(self, query: str, *, limit: int = 5) -> list[SourceRef]:
        kb_id = self.job.options.get("kb")
        if not kb_id:
            return []
        from research.knowledge.selectors import kb_search

        self.emit("step.activity", {"kind": "kb", "query": query})
        hits = kb_search(user=self.job.owner, query=query, collection_ids=[kb_id], limit=limit)
        return [self._register(url=h.url, title=f"{h.document_title} #{h.chunk_index + 1}", text=h.text, kind="kb")
                for h in hits]

    def _register(self, *, url: str, title: str, text: str, kind: str) -> SourceRef:
        for _ in range(5):
            try:
                with transaction.atomic():
                    # Lock the job row so parallel steps hand out numbers one at a time.
                    job_lock(self.job_id, touch=True)
                    existing = Source.objects.filter(job_id=self.job_id, url=url).first()
                    if existing is not None:
                        return _source_ref(existing)
                    number = job_number_next(job_id=self.job_id, model=Source)
                    src = Source.objects.create(
                        job_id=self.job_id, number=number, url=url, title=title[:500], kind=kind, text=text,
                        text_hash=hashlib.sha256(text.encode()).hexdigest(), step_id=self.step_id or "",
                    )
                    event_emit(job_id=self.job_id, type="source.added",
                               payload={"number": number, "url": url, "title": src.title, "kind": kind,
                                        "step": self.step_id,
                                        **({"run": self.run} if self.run is not None else {})})
                    return _source_ref(src)
            except IntegrityError:
                continue
        raise ToolError(f"could not register source {url}")

    def run_python(self, code: str) -> CodeRun:
        from research.jobs.artifacts import artifact_save_bytes
        from research.tools.sandbox import SandboxUnavailable, run_python

        self.emit("step.activity", {"kind": "code", "lines": code.count("\n") + 1})
        try:
            result = run_python(code, timeout=settings.SANDBOX_TIMEOUT_S)
        except SandboxUnavailable as exc:
            self.emit("step.activity", {"kind": "code_refused", "error": str(exc)})
            return CodeRun(stdout="", stderr="", exit_code=-1, timed_out=False,
                           error=f"The Python sandbox is unavailable, so the code was not run: {exc}")
        figures: list[str] = []
        for name, data in sorted(result.files.items()):
            if name.lower().endswith(".png") and data:
                safe = f"{self.step_id or 'job'}-{Path(name).name}"
                artifact_save_bytes(job=self.job, kind="figure", name=f"figures/{safe}", data=data)
                figures.append(safe)
        self.emit("step.activity", {"kind": "code_result", "exit_code": result.exit_code,
                                    "timed_out": result.timed_out, "figures": figures,
                                    "stdout": result.stdout[-500:]})
        return CodeRun(stdout=result.stdout, stderr=result.stderr, exit_code=result.exit_code,
                       timed_out=result.timed_out, figures=figures)

    def sources(self) -> list[SourceRef]:
        return [_source_ref(s) for s in Source.objects.filter(job_id=self.job_id).order_by("number")]

    def figures(self) -> list[str]:
        names = self.job.artifacts.filter(kind="figure").values_list("name", flat=True)
        return [n.removeprefix("figures/") for n in names]

    def mcp_tools(self) -> list[McpToolSpec]:
        return [spec for server in self.options.get("mcp_tools") or [] for spec in mcp_server_tools(str(server))]

    def mcp_call(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        from research.tools.mcp_client import McpError, mcp_call_tool

        self.emit("step.activity", {"kind": "tool", "name": tool, "server": server})
        try:
            return mcp_call_tool(server, tool, arguments)
        except McpError as exc:
            raise ToolError(str(exc)) from exc
