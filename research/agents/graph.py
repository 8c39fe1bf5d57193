"""Step scheduling and plan checks: which plan steps may run now, and whether a plan is valid.

The job's statuses and the moves between them are the state machine in research/jobs/states.py; this
module is the part of the job graph that needs no Django: the steps of a plan and their dependencies.
research/jobs/units/steps.py schedules with ready_steps() and blocked_steps(); the plan-review form and the
services check plans with validate_plan(). See docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.utils.translation import gettext as _

from research.agents.types import Plan, PlanStep


def _step_fields(step: PlanStep | Mapping[str, Any]) -> tuple[str, str, list[str]]:
    # Steps arrive as PlanStep models or as plain dicts (e.g. stored plan JSON).
    if isinstance(step, Mapping):
        return str(step["id"]), str(step.get("step_type", "research")), list(step.get("depends_on") or [])
    return step.id, step.step_type, list(step.depends_on)


def effective_depends_on(steps: Sequence[PlanStep | Mapping[str, Any]]) -> dict[str, list[str]]:
    """What each step waits for (and receives as `prior`).

    Explicit `depends_on` wins. A processing step that names nothing uses the
    results of every step listed before it, so it waits for all of them;
    research and analysis steps without dependencies start at once.
    """
    order = [_step_fields(s) for s in steps]
    ids = {sid for sid, _, _ in order}
    deps: dict[str, list[str]] = {}
    for index, (sid, step_type, depends_on) in enumerate(order):
        known = [d for d in dict.fromkeys(depends_on) if d in ids and d != sid]
        if not known and step_type == "processing":
            known = [prev_id for prev_id, _, _ in order[:index]]
        deps[sid] = known
    return deps


def ready_steps(
    plan_steps: Sequence[PlanStep | Mapping[str, Any]],
    done_ids: Iterable[str],
    running_ids: Iterable[str],
) -> list[str]:
    """Ids of steps that may start now, in plan order.

    A step is ready when it is neither done nor in `running_ids` (pass every step that was started or
    ended: queued, running, failed, cancelled) and everything it waits for is in `done_ids`. Failed
    steps are not done: their dependents never become ready; see blocked_steps().
    """
    done = set(done_ids)
    running = set(running_ids)
    deps = effective_depends_on(plan_steps)
    return [
        sid
        for sid, waits_for in deps.items()
        if sid not in done and sid not in running and all(d in done for d in waits_for)
    ]


def blocked_steps(
    plan_steps: Sequence[PlanStep | Mapping[str, Any]],
    failed_ids: Iterable[str],
    pending_ids: Iterable[str],
) -> dict[str, str]:
    """Pending steps that can never run because a step they wait for failed (directly or through
    another blocked step), mapped to the failed step that blocks them (the first in its dependencies)."""
    deps = effective_depends_on(plan_steps)
    failed = set(failed_ids)
    pending = set(pending_ids)
    blocked: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for sid, waits_for in deps.items():
            if sid not in pending or sid in blocked:
                continue
            bad = [d for d in waits_for if d in failed or d in blocked]
            if bad:
                blocked[sid] = bad[0]
                changed = True
    return blocked


def find_cycle(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """One dependency cycle as a path (first id repeated at the end), or [] if there is none."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in deps.get(node, ()):
            if nxt not in deps:
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for start in deps:
        if start not in state:
            found = visit(start)
            if found:
                return found
    return []


def validate_plan(plan: Plan, *, max_steps: int) -> list[str]:
    """Human-readable problems with a plan (empty list = valid). Also used by the plan-review form."""
    errors: list[str] = []
    steps = plan.steps
    if not steps:
        errors.append(_("The plan needs at least one step."))
    if len(steps) > max_steps:
        errors.append(_("The plan has %(n)d steps; at most %(max)d are allowed.") % {"n": len(steps), "max": max_steps})
    seen: set[str] = set()
    for step in steps:
        if not step.id.strip():
            errors.append(_("Every step needs an id."))
        elif step.id in seen:
            errors.append(_("Step id %(id)r is used more than once.") % {"id": step.id})
        seen.add(step.id)
        if not step.title.strip():
            errors.append(_("Step %(id)r needs a title.") % {"id": step.id})
    for step in steps:
        for dep in step.depends_on:
            if dep == step.id:
                errors.append(_("Step %(id)r depends on itself.") % {"id": step.id})
            elif dep not in seen:
                errors.append(_("Step %(id)r depends on unknown step %(dep)r.") % {"id": step.id, "dep": dep})
    deps = {s.id: [d for d in s.depends_on if d != s.id] for s in steps}
    cycle = find_cycle(deps)
    if cycle:
        errors.append(_("Steps depend on each other in a cycle: %(cycle)s.") % {"cycle": " → ".join(cycle)})
    return errors


def _clean_id(raw: str, index: int) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in raw.strip()).strip("-")
    return (cleaned or f"s{index}")[:40]


def normalize_plan(plan: Plan, *, max_steps: int, locale: str | None = None) -> Plan:
    """Repair a model-written plan so that validate_plan() accepts it.

    Clamps to `max_steps`, makes ids unique and simple, drops unknown or self
    dependencies, breaks cycles (the earliest step of a cycle loses its edges
    into it, so the plan's own order decides), writes the implicit dependencies
    of processing steps (see effective_depends_on) and sets the locale. An empty plan is not
    repaired here: the caller decides what an empty plan means.
    """
    max_steps = max(1, max_steps)
    raw_steps = list(plan.steps)[:max_steps]
    used: set[str] = set()
    renamed: list[tuple[str, PlanStep]] = []  # (original id, step with the new id)
    id_map: dict[str, str] = {}
    for index, step in enumerate(raw_steps, start=1):
        new_id = _clean_id(step.id, index)
        base, n = new_id, 2
        while new_id in used:
            suffix = f"-{n}"
            new_id = base[: 40 - len(suffix)] + suffix
            n += 1
        used.add(new_id)
        id_map.setdefault(step.id, new_id)  # a duplicated id keeps pointing at its first step
        renamed.append((step.id, step.model_copy(update={"id": new_id})))

    steps: list[PlanStep] = []
    for _old, step in renamed:
        deps = [id_map[d] for d in step.depends_on if d in id_map]
        deps = [d for d in dict.fromkeys(deps) if d != step.id]
        steps.append(step.model_copy(update={"depends_on": deps}))

    steps = _explicit_processing_deps(_break_cycles(steps))
    update: dict[str, Any] = {"steps": steps}
    if locale:
        update["locale"] = locale
    return plan.model_copy(update=update)


def _explicit_processing_deps(steps: list[PlanStep]) -> list[PlanStep]:
    # Write effective_depends_on() into the plan, so that the user sees in the review what a
    # processing step waits for and any scheduler that reads depends_on alone agrees.
    deps = {s.id: list(s.depends_on) for s in steps}

    def reaches(start: str, target: str) -> bool:
        todo, seen = [start], set()
        while todo:
            node = todo.pop()
            if node == target:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(deps.get(node, ()))
        return False

    out: list[PlanStep] = []
    for index, step in enumerate(steps):
        if step.step_type == "processing" and not deps[step.id]:
            deps[step.id] = [s.id for s in steps[:index] if not reaches(s.id, step.id)]
            step = step.model_copy(update={"depends_on": deps[step.id]})
        out.append(step)
    return out


def _break_cycles(steps: list[PlanStep]) -> list[PlanStep]:
    # Kahn's algorithm in plan order; when nothing is ready, the earliest
    # remaining step loses its edges to the other remaining steps.
    deps = {s.id: list(s.depends_on) for s in steps}
    remaining = [s.id for s in steps]
    done: set[str] = set()
    while remaining:
        ready = [sid for sid in remaining if all(d in done for d in deps[sid])]
        if not ready:
            stuck = remaining[0]
            deps[stuck] = [d for d in deps[stuck] if d in done]
            ready = [stuck]
        for sid in ready:
            done.add(sid)
            remaining.remove(sid)
    return [s.model_copy(update={"depends_on": deps[s.id]}) for s in steps]
