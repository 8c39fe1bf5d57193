"""Citations and report Markdown: the one citation grammar, the one references-section stripper, and the
helpers every producer and consumer of a report uses (the LLM and offline nodes, the report stage, report
edits, slides and podcast).

Public API
----------
- ``CITATION`` — the grammar: ``[3]``, ``[3, 4]``, ``[3，4]``, ``[3-5]``, ``[3–5]``, ``[3; 4]``, ``[3、4]``
  (each bracket of ``[3][4]`` on its own); never a link text ``[3](url)``, an image ``![3]`` or a
  footnote ``[^1]``; nothing inside code (fenced or inline). A range expands to its numbers (at most 21).
- ``citation_numbers(md)`` — every cited number, in order of first appearance.
- ``filter_citations(md, allowed)`` — keep citations to ``allowed``, written as ``[a][b]``; returns the
  text and how many were dropped.
- ``renumber_citations(md, mapping)`` — map every cited number (unmapped ones dropped).
- ``strip_citations(md)`` — remove every citation (text for speech or slides).
- ``strip_references_section(md)`` — drop a references / sources section (EN or ZH heading) up to the
  next heading of the same or a higher level; code blocks are left alone.
- ``references_markdown(sources, locale)`` — the references list, built from the source registry.
- ``finalize_report(md, sources, locale=...)`` — the report stage's last pass: strip the model's
  references, drop citations to unknown sources, append the registry's list of the cited ones.
- ``ensure_title(md, title)``, ``fix_figure_refs(md, known, ...)``, ``FIGURE_REF`` — report shape.

No Django, no model: pure functions over strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from research import textre
from research.agents.text import is_chinese
from research.agents.types import SourceRef
from research.report.markdown import code_ranges, normalized
from research.report.references import strip_references

_ITEM = r"\s*\d{1,4}\s*(?:[-–]\s*\d{1,4}\s*)?"
_SEPARATORS = r"[,，;；、]"
# Group 1: the blanks before the citation (removed with a citation that is dropped entirely); group 2: items.
# Not after a Latin letter or digit (`x[3]` is indexing) nor `!` (an image); CJK text may touch it: 光伏[3].
# The blanks group starts only where a run of blanks starts. RE2 has no lookaround, so the context is
# checked by _citation_context; no citation can start inside a refused one (the items hold no `[`).
_ASCII_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_!")


def _citation_context(m: textre.Match) -> bool:
    text, start = m.string, m.start()
    before = text[start - 1] if start else ""
    if before in (" ", "\t") or (not m.group(1) and before and before in _ASCII_WORD):
        return False  # inside a blank run, or `x[3]` (indexing) / `![3]` (an image)
    return not text.startswith("(", m.end())  # `[3](url)` is a link


CITATION = textre.compile_guarded(
    rf"([ \t]*)\[({_ITEM}(?:{_SEPARATORS}{_ITEM})*)\]", accept=_citation_context
)
# A citation right after a sentence's end ("… a year. [3]"): anchored (`.match`), so nothing to resume.
TRAILING_CITATION = textre.compile_guarded(
    r"[ \t]*\[[\d\s,，;；、\-–]+\]", accept=lambda m: not m.string.startswith("(", m.end())
)
FIGURE_REF = textre.compile(r"!\[([^\][]*)\]\(figures/([^)\s]+)\)")  # no `[` in the caption: linear scan
MAX_RANGE = 20


def _segments(md: str) -> list[tuple[str, bool]]:
    """`md` cut into (text, is_code) pieces as markdown-it reads it: citations inside code are code."""
    text = normalized(md)
    parts: list[tuple[str, bool]] = []
    last = 0
    for start, end in code_ranges(text):
        parts.append((text[last:start], False))
        parts.append((text[start:end], True))
        last = end
    parts.append((text[last:], False))
    return parts


def _numbers(items: str) -> list[int]:
    out: list[int] = []
    for item in textre.split(_SEPARATORS, items):
        parts = [p.strip() for p in textre.split(r"[-–]", item)]
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            low, high = int(parts[0]), int(parts[1])
            if 0 < high - low <= MAX_RANGE:
                out.extend(range(low, high + 1))
                continue
        out.extend(int(p) for p in parts if p.isdigit())
    return out


# Left where finalize_report(mark_dropped=True) removed a whole citation, so that the claim check
# (research.report.check) knows the sentence lost its only source; the check removes the mark.
DROPPED_MARK = "\x02"


def _rewrite(md: str, keep: Iterable[int] | None, mark: str = "") -> tuple[str, int, list[int]]:
    """Rewrite every citation as [a][b] keeping only `keep` (None: keep all, [] : drop all)."""
    allowed = None if keep is None else set(keep)
    dropped = 0
    kept_all: list[int] = []

    def sub(match: textre.Match) -> str:
        nonlocal dropped
        numbers = _numbers(match.group(2))
        kept = [n for n in dict.fromkeys(numbers) if allowed is None or n in allowed]
        dropped += len(numbers) - len(kept)
        kept_all.extend(n for n in kept if n not in kept_all)
        # A citation removed entirely takes its leading blanks with it ("text [9]." -> "text.").
        return match.group(1) + "".join(f"[{n}]" for n in kept) if kept else mark

    pieces = [segment if is_code else CITATION.sub(sub, segment) for segment, is_code in _segments(md)]
    return "".join(pieces), dropped, kept_all


def citation_numbers(md: str) -> list[int]:
    """Every citation number written in `md` (outside code), in order of first appearance."""
    return _rewrite(md, None)[2]


def filter_citations(md: str, allowed: Iterable[int]) -> tuple[str, int]:
    """Keep only citations to `allowed` numbers, written as [a][b]; return the text and how many were dropped."""
    text, dropped, _ = _rewrite(md, allowed)
    return text, dropped


def renumber_citations(md: str, mapping: dict[int, int]) -> str:
    """Every citation's numbers through `mapping` (numbers it lacks are dropped), written as [a][b]."""

    def sub(match: textre.Match) -> str:
        numbers = [mapping[n] for n in dict.fromkeys(_numbers(match.group(2))) if n in mapping]
        return match.group(1) + "".join(f"[{n}]" for n in dict.fromkeys(numbers)) if numbers else ""

    return "".join(segment if is_code else CITATION.sub(sub, segment) for segment, is_code in _segments(md))


def strip_citations(md: str) -> str:
    """`md` without any citation (for speech and slide text)."""
    return _rewrite(md, ())[0]


def strip_references_section(md: str) -> str:
    """Drop a references list the model (or a user) wrote, with its heading; the registry writes the real one.

    The heading rule and what counts as the list are research.report.references'; prose under the
    heading stays.
    """
    return strip_references(md)


def references_markdown(sources: Sequence[SourceRef], locale: str) -> str:
    heading = "## 参考文献" if is_chinese(locale) else "## References"
    lines = [heading, ""]
    for src in sources:
        title = (src.title or src.url).replace("[", "(").replace("]", ")").strip()
        if src.kind == "kb" or not src.url.startswith(("http://", "https://")):
            label = "知识库" if is_chinese(locale) else "knowledge base"
            lines.append(f"- [{src.number}] {title} ({label})")
        else:
            url = src.url.replace(")", "%29").replace(" ", "%20")
            lines.append(f"- [{src.number}] [{title}]({url})")
    return "\n".join(lines) + "\n"


@dataclass
class FinalReport:
    markdown: str
    cited: list[int]
    removed: int  # citation numbers the model wrote that match no source


def finalize_report(
    md: str, sources: Sequence[SourceRef], *, locale: str, mark_dropped: bool = False
) -> FinalReport:
    """Drop citations to unknown sources, drop any model-written references, append the registry's list.

    `mark_dropped` leaves DROPPED_MARK where a whole citation went, for report_check that follows.
    """
    by_number = {s.number: s for s in sources}
    body, removed, cited = _rewrite(strip_references_section(md), by_number, DROPPED_MARK if mark_dropped else "")
    body = body.rstrip() + "\n"
    cited = sorted(cited)
    if cited:
        body += "\n" + references_markdown([by_number[n] for n in cited], locale)
    return FinalReport(markdown=body, cited=cited, removed=removed)


def ensure_title(md: str, title: str) -> str:
    """Make the report start with a level-1 heading."""
    body = md.lstrip()
    if body.startswith("# "):
        return body
    return f"# {title.strip() or 'Report'}\n\n{body}"


def fix_figure_refs(md: str, known: Sequence[str], *, add_missing: Sequence[str] = (), heading: str = "") -> str:
    """Drop figure embeds that name no known figure; append `add_missing` figures that are not embedded."""
    known_set = set(known)
    md = FIGURE_REF.sub(lambda m: m.group(0) if m.group(2) in known_set else "", md)
    embedded = {m.group(2) for m in FIGURE_REF.finditer(md)}
    missing = [name for name in add_missing if name in known_set and name not in embedded]
    if missing:
        block = "\n\n".join(f"![{_caption(name)}](figures/{name})" for name in missing)
        md = md.rstrip() + ("\n\n" + heading if heading else "") + "\n\n" + block + "\n"
    return md


def _caption(name: str) -> str:
    stem = name.rsplit(".", 1)[0]
    return textre.sub(r"[-_]+", " ", stem).strip() or name


# ---- reading markers back with their positions (used by research.report.document) ----


@dataclass(frozen=True)
class CitationMarker:
    start: int  # where the marker starts (its leading blanks included)
    end: int
    numbers: tuple[int, ...]


def find_citation_markers(text: str) -> list[CitationMarker]:
    """Every `CITATION` in `text` with its span and numbers (no code awareness: pass text outside code only)."""
    return [
        CitationMarker(m.start(), m.end(), tuple(dict.fromkeys(_numbers(m.group(2)))))
        for m in CITATION.finditer(text)
    ]


def cited_numbers(text: str) -> list[int]:
    """The citation numbers in `text`, in order of first appearance, each once."""
    return citation_numbers(text)
