"""The conversation as each kind of server wants it on the wire: OpenAI messages with JSON-string
tool arguments, or (for models that speak tools as text) tools in the system prompt, calls as
``<tool_call>`` blocks and results as ``<tool_response>`` user turns."""

from __future__ import annotations

import json
from typing import Any


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content, ensure_ascii=False)


def tool_name(tool: dict[str, Any]) -> str:
    fn = tool.get("function")
    return str((fn if isinstance(fn, dict) else tool).get("name", ""))


def to_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI wire format: tool-call arguments as JSON strings, tool results as text."""
    out = []
    for msg in messages:
        m = dict(msg)
        if m.get("tool_calls"):
            calls = []
            for tc in m["tool_calls"]:
                tc = dict(tc)
                fn = dict(tc.get("function") or {})
                if not isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.dumps(fn.get("arguments") or {}, ensure_ascii=False)
                tc["function"] = fn
                tc.setdefault("type", "function")
                calls.append(tc)
            m["tool_calls"] = calls
        if m.get("role") == "tool" and not isinstance(m.get("content"), str):
            m["content"] = text_of(m.get("content"))
        out.append(m)
    return out


def tools_system_prompt(tools: list[dict[str, Any]]) -> str:
    """Tool descriptions in the Qwen/Hermes system-prompt format Tongyi was trained on."""
    lines = "\n".join(
        json.dumps(t if "function" in t else {"type": "function", "function": t}, ensure_ascii=False) for t in tools
    )
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def to_text_tags(messages: list[dict[str, Any]], tools_prompt: str) -> list[dict[str, Any]]:
    """Rewrite an OpenAI-style conversation for a model that speaks tools as text: the
    tools go into the system prompt, assistant tool calls become <tool_call> blocks and
    tool results become <tool_response> user turns (consecutive ones merged)."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            block = f"<tool_response>\n{text_of(msg.get('content'))}\n</tool_response>"
            if out and out[-1].get("_tool_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_results": True})
            continue
        if role == "assistant" and msg.get("tool_calls"):
            parts = [text_of(msg.get("content")).strip()]
            for tc in msg["tool_calls"]:
                fn = tc.get("function") or {}
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args) if args.strip() else {}
                    except json.JSONDecodeError:
                        pass  # keep the raw text; the model sees what it wrote
                call = json.dumps({"name": fn.get("name", ""), "arguments": args}, ensure_ascii=False)
                parts.append(f"<tool_call>\n{call}\n</tool_call>")
            out.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
            continue
        out.append({k: v for k, v in msg.items() if k in ("role", "content", "name")})
    for m in out:
        m.pop("_tool_results", None)
    if tools_prompt:
        if out and out[0].get("role") == "system":
            out[0] = {**out[0], "content": f"{text_of(out[0].get('content')).rstrip()}\n\n{tools_prompt}"}
        else:
            out.insert(0, {"role": "system", "content": tools_prompt})
    return out
