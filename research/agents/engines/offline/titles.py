"""Readable step titles for offline plans: a question's parts are split at "and" only where "and" joins
two things the question asks about, never inside a "when …", "if …" clause (issue 33).

"What decides a file's type when glob patterns and magic numbers disagree?" asks one thing: split at its
"and" it became "What decides a file's type when glob patterns" and "… when glob magic numbers disagree".
Such a split is undone here, after the plan is made. Since issue 32 the engine's part-finding (parts.py)
no longer splits inside a clause, so this is a safety net for plans that still hold such fragments.
No Django, no imports from the engine (it calls this): plain functions over the plan's steps.
"""

from __future__ import annotations

from research.agents.types import PlanStep

# Words that open a clause inside a question: an "and" after one joins that clause's own words.
SUBORDINATORS = frozenset(("when", "if", "because", "while", "whether", "although", "though", "unless",
                           "since", "until", "once", "that", "where", "which", "who", "whose", "after",
                           "before", "than"))
_WORD_EDGES = "?？!！.。,，;；:：\"'“”‘’()"


def _words(text: str) -> list[str]:
    return [w.strip(_WORD_EDGES).lower() for w in text.split() if w.strip(_WORD_EDGES)]


def and_inside_a_clause(question: str) -> list[str]:
    """The question's words up to its first subordinator when an "and"/"or" follows it, else []."""
    words = _words(question)
    for i, word in enumerate(words[1:], 1):  # the first word asks ("which", "when"), it opens no clause
        if word in SUBORDINATORS and any(w in ("and", "or") for w in words[i + 1 :]):
            return words[:i]
    return []


def readable_steps(steps: list[PlanStep], *, question: str, locale: str) -> list[PlanStep]:
    """The plan's steps with the parts of a question that was split inside a clause merged back into one
    step titled by the question itself; ids renumbered step-1, step-2, … when steps were merged."""
    if locale.lower().startswith("zh"):
        return steps
    stem = and_inside_a_clause(question)
    if not stem:
        return steps
    broken = [s for s in steps if _words(s.title)[: len(stem)] == stem and _words(s.title) != _words(question)]
    if len(broken) < 2:
        return steps
    first = broken[0]
    query = " ".join(dict.fromkeys(" ".join(s.description for s in broken).split()))
    title = " ".join(question.split()).rstrip("?？!！.。")
    merged = first.model_copy(update={"title": title[:300], "description": query[:4000]})
    broken_ids = {id(s) for s in broken}
    out = [merged if step is first else step for step in steps if step is first or id(step) not in broken_ids]
    renumber = {s.id: f"step-{i}" for i, s in enumerate(out, 1)}
    gone = {s.id for s in broken[1:]}
    return [s.model_copy(update={"id": renumber[s.id],
                                 "depends_on": [renumber.get(d, d) for d in s.depends_on if d not in gone]})
            for s in out]
