#!/usr/bin/env python3
"""List the import graph of the `research` package and fail if it has a cycle.

Every import counts, also those inside functions (a lazy import hides a cycle from Python, not from
the design). `python scripts/import_graph.py` prints one line per module with what it imports from
`research`, then the cycles; exit status 1 if there is one. `--quiet` prints only the cycles.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "research"


def module_names(root: Path) -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    # The longest known module that `name` is, or is inside of (research.jobs.models.X -> research.jobs.models).
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                # `from research.jobs import services` imports the module research.jobs.services;
                # `from research.jobs.models import JobStatus` imports research.jobs.models.
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in modules else base)
    found = set()
    for target in targets:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            resolved = _resolve(target, modules)
            if resolved and resolved != module:
                found.add(resolved)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def build_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = module_names(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print only the cycles")
    args = parser.parse_args(argv)
    graph = build_graph()
    if not args.quiet:
        for name in sorted(graph):
            print(f"{name}: {', '.join(sorted(graph[name])) or '-'}")
    found = cycles(graph)
    for component in found:
        print("import cycle: " + " ↔ ".join(component), file=sys.stderr)
    if not found:
        print(f"{len(graph)} modules, no import cycles", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
