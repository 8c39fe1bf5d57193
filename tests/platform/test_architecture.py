"""The package's shape: no import cycles, one broker client, and every module importable on its own."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import import_graph  # noqa: E402

GRAPH = import_graph.build_graph(ROOT)


def test_the_research_package_has_no_import_cycles():
    assert import_graph.cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_graph.cycles(graph) == [["a", "b", "c"]]
    assert import_graph.cycles({"a": {"b"}, "b": set()}) == []


def test_nothing_imports_the_tasks_module():
    assert [m for m, deps in GRAPH.items() if "research.jobs.tasks" in deps] == []


def test_only_dispatch_talks_to_the_broker():
    talkers = []
    for path in (ROOT / "research").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if any(call in text for call in (".delay(", ".apply_async(", ".send_task(")):
            talkers.append(path.relative_to(ROOT).as_posix())
    assert talkers == ["research/jobs/dispatch.py"]


_IMPORT = """
import importlib, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
if sys.argv[2] == "setup":
    import django
    django.setup()
importlib.import_module(sys.argv[1])
"""


def _needs_django(module: str) -> bool:
    """Whether `module` reaches a models module through its imports (then the app registry must be ready)."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name.endswith(".models"):
            return True
        if name not in seen:
            seen.add(name)
            todo.extend(GRAPH.get(name, ()))
    return False


def _import_alone(module: str) -> tuple[str, str]:
    """Import `module` in a fresh interpreter (after django.setup() where it needs Django); returns the error."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    modes = ["setup"] if _needs_django(module) else ["plain", "setup"]
    for mode in modes:
        proc = subprocess.run([sys.executable, "-c", _IMPORT, module, mode], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            return module, ""
        if "AppRegistryNotReady" not in proc.stderr:
            break
    return module, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"


def test_every_module_imports_in_isolation():
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        failures = [(m, err) for m, err in pool.map(_import_alone, sorted(GRAPH)) if err]
    assert failures == []
