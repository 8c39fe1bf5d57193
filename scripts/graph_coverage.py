#!/usr/bin/env python3
"""Fail when a declared edge of the job graph was taken by no test.

`make test` runs the whole suite with JOB_TRANSITIONS_LOG set, so every process that moves a job (pytest
itself, the Celery workers and daphne it starts) appends "transition JOB FROM TO" lines to one file. This
reads those lines and compares the moves seen with research.jobs.states.GRAPH: an edge no test takes is
an edge nothing shows to work. Exit status 1 lists them; a move that is not declared (it cannot happen,
job_set_status refuses it) is reported too.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def moves_logged(text: str) -> set[tuple[str, str]]:
    moves = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "transition":
            moves.add((parts[2], parts[3]))
    return moves


def declared_edges() -> set[tuple[str, str]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research.settings")
    import django

    django.setup()
    from research.jobs.states import GRAPH

    return {(stage.status.value, target.value) for stage in GRAPH for target in stage.next}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the JOB_TRANSITIONS_LOG file of a whole test run")
    args = parser.parse_args()
    if not args.log.exists():
        print(f"graph coverage: {args.log} does not exist (was the suite run with JOB_TRANSITIONS_LOG?)")
        return 1
    seen = moves_logged(args.log.read_text(encoding="utf-8"))
    declared = declared_edges()
    untaken = sorted(declared - seen)
    undeclared = sorted(seen - declared)
    print(f"graph coverage: {len(declared & seen)} of {len(declared)} declared edges taken by the tests")
    for source, target in untaken:
        print(f"  not taken by any test: {source} -> {target}")
    for source, target in undeclared:
        print(f"  taken but not declared: {source} -> {target}")
    return 1 if untaken or undeclared else 0


if __name__ == "__main__":
    sys.exit(main())
