"""An in-memory AgentContext for unit-testing engines without Django, Redis or the web."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from research.agents.types import CodeRun, JobCancelled, McpToolSpec, SearchHit, SourceRef, ToolError


@dataclass
class FakePage:
    url: str
    title: str
    text: str


def _tokens(text: str) -> set[str]:
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    cjk = re.findall(r"[\u4e00-\u9fff]", text)
    return words | {a + b for a, b in zip(cjk, cjk[1:], strict=False)}


@dataclass
class FakeContext:
    """Implements research.agents.types.AgentContext over a dict of pages."""

    question: str
    pages: list[FakePage] = field(default_factory=list)
    kb_pages: list[FakePage] = field(default_factory=list)
    locale: str = "en-US"
    options: dict[str, Any] = field(default_factory=dict)
    job_id: int = 1
    step_id: str | None = None
    llm_client: Any = None
    cancelled: bool = False
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    registry: dict[str, SourceRef] = field(default_factory=dict)
    figure_names: list[str] = field(default_factory=list)
    code_runs: list[str] = field(default_factory=list)

    @property
    def llm(self) -> Any:
        return self.llm_client

    def emit(self, type: str, payload: dict[str, Any]) -> None:
        self.events.append((type, payload))

    def check_cancelled(self) -> None:
        if self.cancelled:
            raise JobCancelled("cancelled")

    def _rank(self, query: str, pages: list[FakePage]) -> list[FakePage]:
        q = _tokens(query)
        scored = [(len(q & _tokens(p.title + " " + p.text)), p) for p in pages]
        return [p for score, p in sorted(scored, key=lambda sp: -sp[0]) if score > 0]

    def search(self, query: str, *, max_results: int = 8) -> list[SearchHit]:
        self.emit("step.activity", {"kind": "search", "query": query})
        return [SearchHit(p.title, p.url, p.text[:200], "fake") for p in self._rank(query, self.pages)[:max_results]]

    def _register(self, url: str, title: str, text: str, kind: str) -> SourceRef:
        if url not in self.registry:
            self.registry[url] = SourceRef(len(self.registry) + 1, url, title, text, kind)
            self.emit("source.added", {"number": self.registry[url].number, "url": url, "title": title})
        return self.registry[url]

    def fetch(self, url: str) -> SourceRef:
        self.emit("step.activity", {"kind": "fetch", "url": url})
        for page in self.pages:
            if page.url == url:
                self.fetched.append(url)
                return self._register(page.url, page.title, page.text, "web")
        raise ToolError(f"fetch failed: {url} not found")

    def kb_search(self, query: str, *, limit: int = 5) -> list[SourceRef]:
        return [self._register(p.url, p.title, p.text, "kb") for p in self._rank(query, self.kb_pages)[:limit]]

    def run_python(self, code: str) -> CodeRun:
        self.code_runs.append(code)
        return CodeRun(stdout="42\n", stderr="", exit_code=0, timed_out=False)

    def sources(self) -> list[SourceRef]:
        return sorted(self.registry.values(), key=lambda s: s.number)

    def figures(self) -> list[str]:
        return list(self.figure_names)

    def mcp_tools(self) -> list[McpToolSpec]:
        # Like the job context: the servers named in options["mcp_tools"], listed through the MCP client.
        from research.tools.mcp_client import mcp_list_server_tools

        return [McpToolSpec(t.server, t.name, t.description, t.input_schema)
                for server in self.options.get("mcp_tools") or [] for t in mcp_list_server_tools(server)]

    def mcp_call(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        from research.tools.mcp_client import McpError, mcp_call_tool

        self.emit("step.activity", {"kind": "tool", "name": tool, "server": server})
        try:
            return mcp_call_tool(server, tool, arguments)
        except McpError as exc:
            raise ToolError(str(exc)) from exc
