"""The textre calls in research/ whose pattern is a literal, found by reading the source (shared by the
differential test against `re` and the ReDoS sweep)."""

from __future__ import annotations

import ast
from pathlib import Path

from research import textre

RESEARCH = Path(__file__).resolve().parents[2] / "research"
CALLS = {"compile", "compile_guarded", "sub", "subn", "match", "search", "findall", "finditer", "split", "fullmatch"}


def literal_textre_calls() -> list[tuple[str, int, Path, int]]:
    """(pattern, flags, file, line) of each `textre.<call>(LITERAL, …)` outside migrations; patterns built
    from constants are left out (they are compiled at import, so they are in textre.REGISTRY)."""
    found = []
    for path in sorted(RESEARCH.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "textre"
                    and node.func.attr in CALLS and node.args):
                continue
            try:
                pattern = ast.literal_eval(node.args[0])
            except ValueError:
                continue
            flags = 0
            flag_nodes = [k.value for k in node.keywords if k.arg == "flags"]
            if node.func.attr in ("compile", "compile_guarded") and len(node.args) > 1:
                flag_nodes.append(node.args[1])
            for flag_node in flag_nodes:
                flags |= eval(compile(ast.Expression(flag_node), "<flags>", "eval"), {"textre": textre})
            found.append((pattern, flags, path, node.lineno))
    return found
