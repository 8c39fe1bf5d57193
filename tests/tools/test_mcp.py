"""MCP client against the fixture server over stdio: allowlist, calls, errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from research.tools.mcp_client import (
    McpError,
    McpServerConfig,
    McpTool,
    mcp_call_tool,
    mcp_list_server_tools,
    mcp_list_tools,
    mcp_servers,
)

FIXTURE = str(Path(__file__).with_name("mcp_server_fixture.py"))


@pytest.fixture
def call_log(tmp_path):
    return tmp_path / "calls.log"


@pytest.fixture
def servers(call_log):
    return [
        {
            "name": "fixture",
            "transport": "stdio",
            "command": sys.executable,
            "args": [FIXTURE],
            "env": {"MCP_FIXTURE_LOG": str(call_log), "FIXTURE_MODE": "test"},
            "allowed_tools": ["add", "echo", "fail", "env_probe"],
        }
    ]


def test_list_tools_only_allowlisted(servers):
    tools = mcp_list_tools(servers, timeout=30)
    assert {t.name for t in tools} == {"add", "echo", "fail", "env_probe"}
    assert "delete_everything" not in {t.name for t in tools}
    add = next(t for t in tools if t.name == "add")
    assert isinstance(add, McpTool)
    assert add.server == "fixture"
    assert add.description == "Add two integers."
    assert set(add.input_schema["properties"]) == {"a", "b"}


def test_call_tools(servers, call_log, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "sk-secret")
    assert mcp_call_tool("fixture", "add", {"a": 2, "b": 3}, servers=servers, timeout=30) == "5"
    # The operator's env reaches the server; the app's own secrets do not.
    assert mcp_call_tool("fixture", "env_probe", {}, servers=servers, timeout=30) == "clean test"
    assert call_log.read_text().split() == ["add", "env_probe"]


def test_refuses_tool_not_on_allowlist(servers, call_log):
    with pytest.raises(McpError, match="not allowed"):
        mcp_call_tool("fixture", "delete_everything", {}, servers=servers)
    assert not call_log.exists()  # the server was never contacted


def test_tool_error_is_raised(servers):
    with pytest.raises(McpError, match="failed on purpose: because"):
        mcp_call_tool("fixture", "fail", {"reason": "because"}, servers=servers, timeout=30)


def test_unknown_server():
    with pytest.raises(McpError, match="unknown MCP server"):
        mcp_call_tool("nope", "add", {}, servers=[])


def test_unreachable_server_is_skipped_when_listing():
    broken = {"name": "broken", "transport": "stdio", "command": "/nonexistent/server", "allowed_tools": ["x"]}
    assert mcp_list_tools([broken], timeout=10) == []
    with pytest.raises(McpError, match="broken"):
        mcp_list_server_tools("broken", servers=[broken], timeout=10)


def test_servers_from_settings(settings, servers):
    settings.MCP_SERVERS = [*servers, {"name": "remote", "url": "http://mcp.example:8000/mcp", "allowed_tools": ["q"]}]
    configs = mcp_servers()
    assert [c.name for c in configs] == ["fixture", "remote"]
    assert configs[1] == McpServerConfig(
        name="remote", transport="http", url="http://mcp.example:8000/mcp", allowed_tools=("q",)
    )
    assert configs[0].args == (FIXTURE,)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"transport": "stdio", "command": "x"}, "without a name"),
        ({"name": "a", "transport": "carrier-pigeon", "command": "x"}, "unknown transport"),
        ({"name": "a", "transport": "stdio"}, "needs a command"),
        ({"name": "a", "transport": "http"}, "needs a url"),
    ],
)
def test_bad_config(raw, message):
    with pytest.raises(McpError, match=message):
        mcp_servers([raw])


def test_duplicate_names_refused(servers):
    with pytest.raises(McpError, match="duplicate"):
        mcp_servers([*servers, *servers])


def test_server_without_allowlist_offers_nothing(servers):
    servers[0]["allowed_tools"] = []
    assert mcp_list_tools(servers) == []
    with pytest.raises(McpError, match="not allowed"):
        mcp_call_tool("fixture", "add", {"a": 1, "b": 2}, servers=servers)
