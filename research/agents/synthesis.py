"""Synthesis rules shared by both engines: what a merged finding may cite, and its claim check.

Heavy mode (docs/agents.md, "Depth: standard and heavy") runs a research step k times; one synthesis
pass merges the runs' reports into the step's finding. Whatever wrote the merged text (the model, or
the offline engine's union rerank), the same rules finish it here:

- sources enter only through the registry: a citation must name a source one of the runs registered
  (or a prior step's, which the runs could cite); any other number is removed;
- a claim with no registry source is dropped: a sentence left without any citation goes;
- the claim check (research.report.check.report_check) runs on the result, and the finding keeps
  the job's global source numbers (the check numbers a report 1..n; the numbers are mapped back).

Pure functions, no Django, no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from research.agents.types import SourceRef, StepResult
from research.report.check import report_check
from research.report.citations import (
    citation_numbers,
    filter_citations,
    renumber_citations,
    strip_references_section,
)
from research.report.sentences import line_sentences


def run_sources(result: StepResult) -> set[int]:
    """The source numbers a run registered (its notes' `sources`), else those its report cites."""
    raw = result.notes.get("sources") if isinstance(result.notes, dict) else None
    if isinstance(raw, list) and all(isinstance(n, int) for n in raw):
        return set(raw)
    return set(citation_numbers(result.report_md))


def allowed_numbers(runs: Sequence[StepResult], prior: Sequence[StepResult], registered: set[int]) -> set[int]:
    """Numbers a synthesized finding may cite: the runs' sources and what prior steps cited, if registered."""
    allowed: set[int] = set()
    for result in [*runs, *prior]:
        allowed |= run_sources(result) | set(citation_numbers(result.report_md))
    return allowed & registered


def drop_uncited(md: str) -> tuple[str, int]:
    """Sentences without a citation removed (headings kept); returns the text and how many went."""
    out: list[str] = []
    dropped = 0
    for line in md.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        kept: list[str] = []
        for start, end in line_sentences(line):
            sentence = line[start:end]
            if citation_numbers(sentence):
                kept.append(sentence)
            elif sentence.strip(" -*•\t"):
                dropped += 1
        text = "".join(kept)
        if text.strip():
            prefix = line[: len(line) - len(line.lstrip())]
            bullet = line.lstrip()[:2] if line.lstrip()[:2] in ("- ", "* ") else ""
            body = text.strip()
            if bullet and not body.startswith(bullet):
                body = bullet + body
            out.append(prefix + body)
    text = "\n".join(out)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip() + "\n" if text.strip() else "", dropped


@dataclass
class CheckedFinding:
    markdown: str
    removed_citations: int = 0
    dropped_claims: int = 0  # sentences without any registry source
    check: dict[str, Any] = field(default_factory=dict)  # report_check's counts


def finding_check(md: str, sources: Sequence[SourceRef], *, allowed: set[int], locale: str) -> CheckedFinding:
    """A merged finding cleaned by the rules in the module doc, with its global source numbers."""
    text = strip_references_section(md)
    text, removed = filter_citations(text, allowed)
    text, dropped = drop_uncited(text)
    if not text.strip():
        return CheckedFinding("", removed, dropped)
    registered = [s for s in sources if s.number in allowed]
    checked = report_check(text, registered, locale=locale)
    body = strip_references_section(checked.markdown).rstrip()
    summary = checked.summary()
    if summary["unsupported_claims"] or summary["removed_claims"] or summary["removed_links"]:
        # The check's one-line note closes the body; the step card and the report show counts instead.
        head, sep, last = body.rpartition("\n\n")
        if sep and last.startswith("_") and last.endswith("_"):
            body = head.rstrip()
    back = {new: old for new, old in enumerate(checked.cited, start=1)}
    body = renumber_citations(body, back).strip()
    return CheckedFinding(body + "\n" if body else "", removed + checked.removed_citations, dropped, summary)


def best_run(runs: Sequence[StepResult]) -> StepResult:
    """The run to fall back on when a merge leaves nothing: the one citing the most sources."""
    return max(runs, key=lambda r: (len(set(citation_numbers(r.report_md))), len(r.report_md)))
