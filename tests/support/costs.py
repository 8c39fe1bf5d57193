"""The cost of a call for the budget tests (tests/security): the best of two timed runs, so one slow run
on a loaded machine does not count. Budgets compare such costs as ratios measured in one process."""

from __future__ import annotations

import time
from collections.abc import Callable


def cost(func: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best
