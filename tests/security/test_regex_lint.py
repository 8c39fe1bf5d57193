"""Linear-time text handling by construction: research/ uses no backtracking regex engine.

Every regular expression in research/ goes through research/textre.py (RE2, linear in the text).
This lint walks the source and fails on the stdlib `re` module (import, `re.compile`, `re.sub`, …),
the third-party `regex` module, `sre_*`, `fnmatch` (its patterns become `re` patterns) and a direct
`re2` import outside the wrapper, unless the use is on ALLOWED below.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from research import textre

ROOT = Path(__file__).resolve().parents[2]
RESEARCH = ROOT / "research"

# Modules whose use would bring a backtracking engine (or bypass the wrapper's checks).
BANNED_MODULES = {"re", "regex", "sre_compile", "sre_parse", "sre_constants", "fnmatch", "re2"}

# (file, the banned name it may use) -> why the text it sees is trusted. Empty: nothing in research/ needs
# the stdlib engine. To add an entry, name the pattern and say where its text comes from (e.g. "settings
# string parsed once at start-up"); text from users, uploads, fetched pages or a model never qualifies.
ALLOWED: dict[tuple[str, str], str] = {
    ("research/textre.py", "re2"): "the wrapper itself: every pattern is checked and translated here",
}


def _sources() -> list[Path]:
    return sorted(p for p in RESEARCH.rglob("*.py") if "migrations" not in p.parts)


def _banned_uses(path: Path) -> list[tuple[int, str]]:
    """(line, module) for each import of a banned module or attribute use of an imported one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in BANNED_MODULES:
                    found.append((node.lineno, top))
                    aliases[alias.asname or top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top in BANNED_MODULES:
                found.append((node.lineno, top))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in BANNED_MODULES:
                found.append((node.lineno, str(node.args[0].value)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in BANNED_MODULES:
                found.append((node.lineno, str(node.args[0].value)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            found.append((node.lineno, aliases[node.value.id]))
    return found


def test_no_backtracking_regex_engine_in_research():
    problems = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        for line, module in _banned_uses(path):
            if (rel, module) not in ALLOWED:
                problems.append(f"{rel}:{line}: uses `{module}`; use research.textre (RE2) or string methods")
    assert not problems, "\n".join(problems)


def test_the_allow_list_names_real_uses():
    """A stale allow-list entry would let a later use in with nobody looking."""
    for (rel, module), why in ALLOWED.items():
        assert why.strip()
        assert any(m == module for _line, m in _banned_uses(ROOT / rel)), f"{rel} no longer uses {module}"


def test_the_lint_catches_each_form(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import re\nimport re as r2\nfrom re import sub\nimport regex\nimport fnmatch\n"
        "x = r2.compile('a')\ny = __import__('re')\n",
        encoding="utf-8",
    )
    modules = [m for _line, m in _banned_uses(sample)]
    assert modules.count("re") >= 5 and "regex" in modules and "fnmatch" in modules


@pytest.mark.parametrize(
    "pattern",
    [r"a(?=b)", r"a(?!b)", r"(?<=a)b", r"(?<!a)b", r"(a)\1", r"(?P<x>a)(?P=x)", r"[\W]", r"[^\S\n]", r"a{1,2000}"],
)
def test_textre_refuses_what_re2_cannot_run_in_linear_time(pattern: str):
    with pytest.raises(textre.error):
        textre.compile(pattern)


def test_every_research_module_compiles_its_patterns_at_import():
    """Module-level patterns are compiled on import, so a pattern RE2 refuses fails here, not in a request."""
    for path in _sources():
        if "textre" not in path.read_text(encoding="utf-8"):
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        importlib.import_module(module)
    assert len(textre.REGISTRY) > 60
