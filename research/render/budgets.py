"""Render budgets: a report's render cost is bounded by what it contains (issue 34, case 5).

Some content costs the renderers far more than plain prose of the same length: 12,000 `## a` headings
made the PDF take 152 s (0.7 s for prose), a 6,000-row table 22 s, and one 48,000-character line of
Chinese with no sentence punctuation made the podcast take 84 s, spoken as one sentence. So:

- an edit with more headings or table cells than the budget is refused, with the reason
  (`over_budget`; the edit form's check, research/jobs/web/forms.py, says why before anything is saved
  or rendered);
- the PDF's table of contents lists at most research.render.pdf.TOC_MAX_ENTRIES and says how many more
  sections there are;
- a spoken podcast line is cut at SPOKEN_LINE_MAX_CHARS (at a word boundary, or anywhere in a CJK run)
  and ends with "…" (`spoken_line`).

The counts come from one markdown-it parse (linear time), not from patterns over the text.
"""

from __future__ import annotations

from dataclasses import dataclass

from research.report.markdown import parser
from research.scripts import WIDE, in_ranges

SPOKEN_LINE_MAX_CHARS = 600  # about 40 s of speech in English, 2 min in Chinese


@dataclass(frozen=True)
class RenderCost:
    headings: int
    table_cells: int


def render_cost(markdown: str) -> RenderCost:
    """How many headings and table cells the report has, as a Markdown parser sees them."""
    headings = cells = 0
    for token in parser().parse(markdown):  # the report package's one parser (research.report.markdown)
        if token.type == "heading_open":
            headings += 1
        elif token.type in ("th_open", "td_open"):
            cells += 1
    return RenderCost(headings=headings, table_cells=cells)


def _could_exceed(markdown: str, max_headings: int, max_cells: int) -> bool:
    """A cheap upper bound: every heading starts a line with "#" (after blanks) and every table cell is
    next to a "|"; when neither bound passes its budget, no parse is needed (plain prose costs nothing)."""
    pipes = markdown.count("|")
    if pipes * 2 + 2 > max_cells:
        return True
    return sum(1 for line in markdown.splitlines() if line.lstrip()[:1] == "#") > max_headings


def over_budget(markdown: str, *, max_headings: int, max_cells: int) -> tuple[str, int] | None:
    """("headings" or "table_cells", the count found) when rendering would cost more than the budget, else None.

    Parsed in growing prefixes (cut at line ends): a prefix's block structure is the whole's up to the cut,
    so its counts never exceed the whole's, and an edit far over the budget is refused after parsing a
    small part of it. The check's cost is thereby bounded by the budget, not by the attack.
    """
    if not _could_exceed(markdown, max_headings, max_cells):
        return None
    size = 16_384
    while True:
        cut = len(markdown) if size >= len(markdown) else (markdown.rfind("\n", 0, size) + 1 or size)
        cost = render_cost(markdown[:cut])
        if cost.headings > max_headings:
            return "headings", cost.headings
        if cost.table_cells > max_cells:
            return "table_cells", cost.table_cells
        if cut >= len(markdown):
            return None
        size *= 4


def spoken_line(text: str, limit: int = SPOKEN_LINE_MAX_CHARS) -> str:
    """`text` cut to at most `limit` characters for one spoken podcast line, ending with "…" when cut.

    Cut at the last blank inside the limit, or at the limit itself in a CJK run (which has no blanks)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    blank = head.rfind(" ")
    if blank > limit // 2 and not in_ranges(head[-1], WIDE):
        head = head[:blank]
    return head.rstrip(" ,;:，；：、") + "…"
