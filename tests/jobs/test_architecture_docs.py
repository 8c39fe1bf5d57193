"""docs/architecture.md matches the code: its tables are read with markdown-it and checked against the
package (every module of research/jobs listed; the "Imports Django?" column true of every package)."""

from __future__ import annotations

import ast
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def _tables(text: str) -> list[list[list[str]]]:
    """Every table of the document as rows of cells' inline source (header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] = []
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and tables and token.level >= 3:
            row.append(token.content)
        elif token.type == "tr_close":
            tables[-1].append(row)
    return tables


def _code_spans(cell: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parseInline(cell)
    return [child.content for token in tokens for child in (token.children or []) if child.type == "code_inline"]


def _imports_django(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if any(name == "django" or name.startswith("django.") for name in names):
            return True
    return False


def _parts_table() -> list[list[str]]:
    for table in _tables(DOC.read_text(encoding="utf-8")):
        if table and table[0][:1] == ["Package"] and table[0][-1] == "Imports Django?":
            return table[1:]
    raise AssertionError("docs/architecture.md has no Parts table with an 'Imports Django?' column")


def test_the_imports_django_column_is_true_of_every_package():
    checked = 0
    for row in _parts_table():
        (target,) = _code_spans(row[0])
        path = ROOT / target.rstrip("/")
        files = sorted(p for p in path.rglob("*.py") if "migrations" not in p.parts) if path.is_dir() else [path]
        importers = {p.relative_to(path).as_posix() if path.is_dir() else p.name for p in files
                     if _imports_django(p)}
        cell = row[-1].strip()
        if cell == "yes":
            assert importers, f"{target}: the docs say it imports Django, and nothing in it does"
        elif cell == "no":
            assert not importers, f"{target}: the docs say no Django, but {sorted(importers)} import it"
        else:
            assert cell.startswith("only "), f"{target}: 'yes', 'no' or 'only `module.py` (why)', not {cell!r}"
            assert importers == set(_code_spans(cell)), (
                f"{target}: the docs name {sorted(_code_spans(cell))} as its Django importers; "
                f"the code has {sorted(importers)}")
        checked += 1
    assert checked >= 8


def test_every_module_of_the_jobs_package_is_in_its_tables():
    text = DOC.read_text(encoding="utf-8")
    listed: set[str] = set()
    for table in _tables(text):
        if table and table[0][:1] == ["Module"]:
            for row in table[1:]:
                listed.update(_code_spans(row[0]))
    jobs = ROOT / "research" / "jobs"
    missing = []
    for path in sorted(jobs.rglob("*.py")):
        rel = path.relative_to(jobs)
        if path.name == "__init__.py" or rel.parts[0] in {"migrations", "management", "templatetags"}:
            continue
        if path.name not in listed:
            missing.append(rel.as_posix())
    assert missing == [], f"research/jobs modules missing from docs/architecture.md: {missing}"


def test_the_table_reader_sees_cells():
    table = _tables("| A | B |\n|---|---|\n| `x.py` | only `y.py` (z) |\n")
    assert table == [[["A", "B"], ["`x.py`", "only `y.py` (z)"]]]
    assert _code_spans("only `a.py` (x) and `b.py`") == ["a.py", "b.py"]


def test_every_package_of_research_has_a_row():
    listed = {_code_spans(row[0])[0].rstrip("/") for row in _parts_table()}
    packages = {f"research/{path.parent.name}" for path in (ROOT / "research").glob("*/__init__.py")}
    assert packages - listed == set()
