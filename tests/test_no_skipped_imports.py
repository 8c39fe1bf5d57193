"""A broken import of the project's own code must fail, not skip: importorskip is for optional third-party
packages only (llama_cpp under `make test-models`)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_importorskip_of_the_projects_own_modules():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "importorskip" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                    and node.args[0].value.split(".")[0] in {"research", "tests", "bench"}):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} {node.args[0].value}")
    assert found == []
