"""Tools from MCP servers configured by the operator (docs/architecture.md, "Tools").

Servers come only from `settings.MCP_SERVERS` (or an explicit list in code),
never from the browser, and only tools named in a server's `allowed_tools`
are listed or callable. Example setting (JSON in the MCP_SERVERS env var):

    [{"name": "files", "transport": "stdio", "command": "python", "args": ["-m", "my_server"],
      "env": {"ROOT": "/data"}, "allowed_tools": ["read_file", "search"]},
     {"name": "web", "transport": "http", "url": "http://mcp.internal:8000/mcp",
      "allowed_tools": ["lookup"]}]

Each call opens a session, does its work and closes it (asyncio.run per call):
slower than a pooled session, but Celery tasks stay synchronous and no
subprocess or socket outlives the call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from research.tools.config import setting

DEFAULT_TIMEOUT_S = 60.0
_T = TypeVar("_T")


class McpError(Exception):
    """A configuration problem, a refused tool, or a failed call."""


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    transport: str  # "stdio" | "http"
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    allowed_tools: tuple[str, ...] = ()
    cwd: str | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> McpServerConfig:
        name = str(raw.get("name") or "").strip()
        transport = str(raw.get("transport") or ("http" if raw.get("url") else "stdio")).lower()
        if not name:
            raise McpError(f"MCP server without a name: {raw!r}")
        if transport in ("streamable-http", "streamable_http"):
            transport = "http"
        if transport not in ("stdio", "http"):
            raise McpError(f"MCP server {name!r}: unknown transport {transport!r} (stdio or http)")
        if transport == "stdio" and not raw.get("command"):
            raise McpError(f"MCP server {name!r}: stdio transport needs a command")
        if transport == "http" and not raw.get("url"):
            raise McpError(f"MCP server {name!r}: http transport needs a url")
        return cls(
            name=name,
            transport=transport,
            command=str(raw.get("command") or ""),
            args=tuple(str(a) for a in raw.get("args") or ()),
            env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
            url=str(raw.get("url") or ""),
            allowed_tools=tuple(str(t) for t in raw.get("allowed_tools") or ()),
            cwd=raw.get("cwd"),
        )


@dataclass(frozen=True)
class McpTool:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]


ServersArg = list[McpServerConfig] | list[dict[str, Any]] | None




def mcp_servers(servers: ServersArg = None) -> list[McpServerConfig]:
    """The configured servers (settings.MCP_SERVERS unless a list is given)."""
    raw = servers if servers is not None else (setting("MCP_SERVERS", []) or [])
    out = [s if isinstance(s, McpServerConfig) else McpServerConfig.from_dict(s) for s in raw]
    names = [s.name for s in out]
    if len(names) != len(set(names)):
        raise McpError(f"duplicate MCP server names in {names}")
    return out


def _client(server: McpServerConfig, timeout: float) -> Any:
    from mcp import Client, StdioServerParameters

    if server.transport == "stdio":
        # The SDK passes the child only a small safe environment (PATH, HOME…)
        # plus `env` from the operator's config: no app secrets leak into it.
        params = StdioServerParameters(
            command=server.command, args=list(server.args), env=dict(server.env) or None, cwd=server.cwd
        )
        return Client(params, read_timeout_seconds=timeout)
    return Client(server.url, read_timeout_seconds=timeout)


def _run(coro_fn: Callable[[], Awaitable[_T]], timeout: float, what: str) -> _T:
    async def bounded() -> _T:
        return await asyncio.wait_for(coro_fn(), timeout)

    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(bounded())
        # Called from async code (an ASGI view): run the session on its own loop in a thread.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, bounded()).result()
    except McpError:
        raise
    except TimeoutError as exc:
        raise McpError(f"{what}: timed out after {timeout:g} s") from exc
    except BaseExceptionGroup as exc:  # anyio task groups wrap transport errors
        first = exc.exceptions[0] if exc.exceptions else exc
        raise McpError(f"{what}: {type(first).__name__}: {first}") from exc
    except Exception as exc:
        raise McpError(f"{what}: {type(exc).__name__}: {exc}") from exc


def _find(server: str, servers: ServersArg) -> McpServerConfig:
    for s in mcp_servers(servers):
        if s.name == server:
            return s
    raise McpError(f"unknown MCP server {server!r}")


def mcp_list_tools(servers: ServersArg = None, *, timeout: float = DEFAULT_TIMEOUT_S) -> list[McpTool]:
    """Allow-listed tools of every configured server. A server that fails to
    answer is skipped (the researcher simply does not get its tools)."""
    tools: list[McpTool] = []
    for server in mcp_servers(servers):
        if not server.allowed_tools:
            continue
        try:
            tools.extend(_list_one(server, timeout))
        except McpError:
            continue
    return tools


def mcp_list_server_tools(
    server: str, *, servers: ServersArg = None, timeout: float = DEFAULT_TIMEOUT_S
) -> list[McpTool]:
    """Allow-listed tools of one server; raises McpError if it can't be reached."""
    return _list_one(_find(server, servers), timeout)


def _list_one(server: McpServerConfig, timeout: float) -> list[McpTool]:
    async def go() -> list[McpTool]:
        found: list[McpTool] = []
        async with _client(server, timeout) as client:
            cursor: str | None = None
            for _page in range(50):  # a server that paginates forever cannot hang us
                result = await client.list_tools(cursor=cursor)
                for tool in result.tools:
                    if tool.name in server.allowed_tools:
                        found.append(
                            McpTool(
                                server=server.name,
                                name=tool.name,
                                description=tool.description or "",
                                input_schema=dict(tool.input_schema or {}),
                            )
                        )
                cursor = result.next_cursor
                if not cursor:
                    break
        return found

    return _run(go, timeout, f"listing tools of MCP server {server.name!r}")


def mcp_call_tool(
    server: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    servers: ServersArg = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> str:
    """Call an allow-listed tool; returns its text content joined by blank lines.

    Raises McpError for an unknown server, a tool not on the allowlist (the
    server is not contacted), a tool error, or a timeout.
    """
    config = _find(server, servers)
    if tool not in config.allowed_tools:
        raise McpError(f"MCP tool {tool!r} of server {server!r} is not allowed (allowed: {list(config.allowed_tools)})")

    async def go() -> str:
        async with _client(config, timeout) as client:
            result = await client.call_tool(tool, arguments or {}, read_timeout_seconds=timeout)
        text = _result_text(result)
        if result.is_error:
            raise McpError(f"MCP tool {server}/{tool} failed: {text or 'no details'}")
        return text

    return _run(go, timeout, f"calling MCP tool {server}/{tool}")


def _result_text(result: Any) -> str:
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and getattr(block.resource, "text", None):
            parts.append(block.resource.text)
        elif kind:
            parts.append(f"[{kind} content omitted]")
    if not parts and result.structured_content is not None:
        import json

        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n\n".join(parts)


def stdio_python_server(name: str, script: str, allowed_tools: list[str], **extra: Any) -> dict[str, Any]:
    """Config dict for a stdio server that is a Python script run by this interpreter."""
    import sys

    return {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": [os.fspath(script)],
        "allowed_tools": allowed_tools,
        **extra,
    }
