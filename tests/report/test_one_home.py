"""Issue 31: each text rule of the report lives in research/report/; a test fails when a second one appears.

Read with `ast` (structure, not text): imports of markdown_it, pattern literals handed to research.textre
that spell a citation or a references heading, and sentence splitters that do not use the report's.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "research"
HOME = ROOT / "report"
_SHIMS = {ROOT / "agents" / "citations.py", ROOT / "agents" / "verify.py", ROOT / "render" / "document.py"}
_PATTERN_CALLS = {"compile", "compile_guarded", "sub", "search", "match", "fullmatch", "findall", "finditer", "split"}
# A heading rule names several of these (one alone is a word, like the CSS class "references").
_HEADING_WORDS = ("referenc", "sources", "bibliograph", "works cited", "参考", "来源")
_SPLITTERS = ("sentence_bounds", "line_sentences", "split_marked_text")


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(ROOT.rglob("*.py"))
            if HOME not in path.parents and "migrations" not in path.parts]


def _patterns(tree: ast.Module) -> list[str]:
    """String literals passed as the pattern of a textre call."""
    found: list[str] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _PATTERN_CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "textre" and node.args):
            for part in ast.walk(node.args[0]):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found.append(part.value)
    return found


def test_only_the_report_package_parses_markdown():
    offenders = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] == "markdown_it"]
    assert offenders == []


def test_no_second_citation_pattern_or_references_heading_rule():
    offenders = []
    for path, tree in _modules():
        for pattern in _patterns(tree):
            citation = "\\[" in pattern and "\\d" in pattern
            heading = sum(word in pattern.lower() for word in _HEADING_WORDS) >= 2
            if citation or heading:
                offenders.append(f"{path.relative_to(ROOT)}: {pattern!r}")
        for node in ast.walk(tree):  # a set of heading names is a heading rule too
            if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
                words = [e.value.lower() for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                if sum(any(h in w for h in _HEADING_WORDS) for w in words) >= 2:
                    offenders.append(f"{path.relative_to(ROOT)}: {words}")
    assert offenders == []


def test_every_sentence_splitter_is_the_reports():
    offenders = []
    for path, tree in _modules():
        if path in _SHIMS:
            continue
        uses = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and "sentence" in node.name and "split" in node.name:
                if not uses & set(_SPLITTERS):
                    offenders.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert offenders == []


def test_the_rules_catch_a_second_copy():
    tree = ast.parse('from research import textre\nX = textre.compile(r"\\[(\\d+)\\]")\n'
                     'Y = textre.compile(r"^#+ (references|works cited)$")\n')
    assert len(_patterns(tree)) == 2
