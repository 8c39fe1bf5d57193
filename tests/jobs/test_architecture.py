"""The package's shape: no import cycles, one broker client, and every module importable on its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


# A driver run in a fresh interpreter: it imports the third-party libraries once (none of `research`),
# then forks one child per module, which imports that module alone (after django.setup() where it needs
# Django; a module that turns out to need it is tried again that way) and exits. The children are
# isolated from each other; forking only saves starting Python a hundred times.
_DRIVER = """
import json, os, sys, traceback
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
import django, celery, kombu, channels, pydantic, httpx, billiard  # noqa: F401  third-party only
assert not any(m == "research" or m.startswith("research.") for m in sys.modules)
def run(module, setup):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        error = ""
        try:
            if setup:
                django.setup()
            __import__(module)
        except BaseException:
            error = traceback.format_exc().strip().splitlines()[-1]
        os.write(write, error.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        error = fh.read()
    os.waitpid(pid, 0)
    return error
results = {}
for line in sys.stdin:
    module, setup = line.split()
    error = run(module, setup == "1")
    if "AppRegistryNotReady" in error:  # it needs Django's models (e.g. contrib.auth) at import time
        error = run(module, True)
    results[module] = error
print(json.dumps(results))
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


@pytest.mark.slow  # one child interpreter per module
def test_every_module_imports_in_isolation():
    modules = sorted(GRAPH)
    lines = "".join(f"{m} {int(_needs_django(m))}\n" for m in modules)
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    proc = subprocess.run([sys.executable, "-c", _DRIVER], input=lines, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(results) == modules
    assert {m: err for m, err in results.items() if err} == {}
