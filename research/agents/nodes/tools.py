"""The function tools offered to the model: their JSON schemas, and MCP tools under safe names.

The tools run through the AgentContext (search, fetch, knowledge base, sandbox, MCP), which registers
sources and emits the tool events itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from research import textre
from research.agents.types import McpToolSpec


def tool_schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


WEB_SEARCH_TOOL = tool_schema(
    "web_search",
    "Search the web. Returns titles, URLs and snippets (leads only; fetch a page to read and cite it).",
    {"query": {"type": "string", "description": "search query, specific keywords"}},
    ["query"],
)
FETCH_PAGE_TOOL = tool_schema(
    "fetch_page",
    "Fetch a web page and read its text. Returns the page with its citation number [n].",
    {"url": {"type": "string", "description": "an http(s) URL, usually from web_search results"}},
    ["url"],
)
KNOWLEDGE_SEARCH_TOOL = tool_schema(
    "knowledge_search",
    "Search the user's own documents (knowledge base). Returns passages with their citation numbers [n].",
    {"query": {"type": "string", "description": "what to look for"}},
    ["query"],
)
RUN_PYTHON_TOOL = tool_schema(
    "run_python",
    "Run a complete Python program in a sandbox (no network). Returns stdout, stderr and saved PNG figures.",
    {"code": {"type": "string", "description": "the complete Python program"}},
    ["code"],
)
BUILTIN_TOOLS = {"web_search": WEB_SEARCH_TOOL, "fetch_page": FETCH_PAGE_TOOL,
                 "knowledge_search": KNOWLEDGE_SEARCH_TOOL, "run_python": RUN_PYTHON_TOOL}


@dataclass
class OfferedMcpTool:
    """An MCP tool offered to the researcher under a function name that cannot clash with the built-ins."""

    function_name: str
    spec: McpToolSpec
    schema: dict[str, Any]


def offered_mcp_tools(specs: list[McpToolSpec]) -> list[OfferedMcpTool]:
    tools: list[OfferedMcpTool] = []
    used = set(BUILTIN_TOOLS)
    for spec in specs:
        base = textre.sub(r"[^A-Za-z0-9_-]", "_", f"mcp_{spec.name}")[:60]
        name, n = base, 2
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        schema = tool_schema(name, (spec.description or spec.name)[:1000], {}, [])
        if isinstance(spec.input_schema, dict) and spec.input_schema.get("type") == "object":
            schema["function"]["parameters"] = spec.input_schema
        tools.append(OfferedMcpTool(name, spec, schema))
    return tools
