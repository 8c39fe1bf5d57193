"""A tiny MCP server for the tests, spoken to over stdio.

Run as a script: `python tests/tools/mcp_server_fixture.py`. If MCP_FIXTURE_LOG
is set, each tool call appends the tool's name to that file, so a test can
prove a refused tool never reached the server.
"""

from __future__ import annotations

import os

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("fixture")


def _log(name: str) -> None:
    path = os.environ.get("MCP_FIXTURE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(name + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _log("add")
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    _log("echo")
    return text


@server.tool()
def env_probe() -> str:
    """Report whether the client's secrets reached this process."""
    _log("env_probe")
    return "leaked" if "SECRET_TOKEN" in os.environ else f"clean {os.environ.get('FIXTURE_MODE', '')}"


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    _log("fail")
    raise ToolError(f"failed on purpose: {reason}")  # ToolError: the message reaches the client


@server.tool()
def delete_everything() -> str:
    """A dangerous tool that must never be allow-listed."""
    _log("delete_everything")
    return "everything deleted"


if __name__ == "__main__":
    server.run()
