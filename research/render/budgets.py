"""Render budgets: a report's render cost is bounded by what it contains (issue 34, case 5).

Some content costs the renderers far more than plain prose of the same length: 12,000 `## a` headings
made the PDF take 152 s (0.7 s for prose), a 6,000-row table 22 s, and one 48,000-character line of
Chinese with no sentence punctuation made the podcast take 84 s, spoken as one sentence. So:

- an edit with more headings or table cells than the budget is refused, with the reason
  (`render_budget_problem`, called by the edit form's check before anything is saved or rendered);
- the PDF's table of contents lists at most research.render.pdf.TOC_MAX_ENTRIES and says how many more
  sections there are;
- a spoken podcast line is cut at SPOKEN_LINE_MAX_CHARS (at a word boundary, or anywhere in a CJK run)
  and ends with "…" (`spoken_line`).

The counts come from one markdown-it parse (linear time), not from patterns over the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

SPOKEN_LINE_MAX_CHARS = 600  # about 40 s of speech in English, 2 min in Chinese


@dataclass(frozen=True)
class RenderCost:
    headings: int
    table_cells: int


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def render_cost(markdown: str) -> RenderCost:
    """How many headings and table cells the report has, as a Markdown parser sees them."""
    headings = cells = 0
    for token in _parser().parse(markdown):
        if token.type == "heading_open":
            headings += 1
        elif token.type in ("th_open", "td_open"):
            cells += 1
    return RenderCost(headings=headings, table_cells=cells)


def render_budget_problem(markdown: str) -> str:
    """Why rendering this report would cost too much (headings, table cells), or ""."""
    cost = render_cost(markdown)
    most = int(settings.REPORT_MAX_HEADINGS)
    if cost.headings > most:
        return str(_("The report has %(n)s headings; at most %(max)s can be rendered (each one costs the PDF "
                     "and slides a page break's worth of layout). Merge some sections.")
                   % {"n": f"{cost.headings:,}", "max": f"{most:,}"})
    most = int(settings.REPORT_MAX_TABLE_CELLS)
    if cost.table_cells > most:
        return str(_("The report's tables have %(n)s cells; at most %(max)s can be rendered. Shorten the "
                     "tables or link to the full data instead.") % {"n": f"{cost.table_cells:,}", "max": f"{most:,}"})
    return ""


def _is_cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef"


def spoken_line(text: str, limit: int = SPOKEN_LINE_MAX_CHARS) -> str:
    """`text` cut to at most `limit` characters for one spoken podcast line, ending with "…" when cut.

    Cut at the last blank inside the limit, or at the limit itself in a CJK run (which has no blanks)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    blank = head.rfind(" ")
    if blank > limit // 2 and not _is_cjk(head[-1]):
        head = head[:blank]
    return head.rstrip(" ,;:，；：、") + "…"
