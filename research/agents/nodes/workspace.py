"""The researcher's workspace: one fixed token budget per round for its memory and its last action.

IterResearch keeps a round's prompt the same size however many rounds ran. The task part of the
prompt (system prompt, question, plan, step, tools) is the same every round; this module sizes the
rest. A run gets `total` tokens for the evolving report as the workspace shows it (its memory) plus
the last action (the tool calls and their results). The report view is capped at `report` tokens (a
quarter of the total unless an option says otherwise) and the results get what the view and the calls
leave, so a round whose results fill their room is task + total tokens whatever the round number: the
report's growth is paid for by the results, not by the prompt. The total fits the model's window.

A report over its cap is compacted, never cut blindly: the view keeps its leading headings and its
newest parts, and the older parts move to an archive. A note in the view lists the citation numbers
that only the archive holds, so the model knows those sources are read and citable (or, with none,
says that parts were moved out), and that those parts come back; at the end every archived part the
final step report does not hold is added back to it, under the heading it stood under. Nothing the
researcher found is lost, and the model is told what it does not see.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from research.agents.nodes.model import ANSWER_RESERVE, ChatModel, truncate_tokens
from research.agents.prompts import load_fragment
from research.report.citations import citation_numbers
from research.report.markdown import normalized, parse

WORKSPACE_TOKEN_CAP = 8_000  # report view + last action, every round
REPORT_SHARE = 4  # the report view gets 1/REPORT_SHARE of the workspace by default (2,000 of 8,000)
SOURCE_TOKEN_CAP = 2_500  # one fetched page / kb passage
MIN_WORKSPACE = 400  # a window too small for more is left to the client's context fitting
MIN_RESULTS = 150  # the last action's results always get at least this much
TRUNCATED = "[… truncated]"  # how truncate_tokens marks a cut text
NOTE = "research_memory_note"  # the note listing the citations moved out of sight
PLAIN_NOTE = "research_memory_note_plain"  # the same when the parts moved out cite nothing


def option_cap(options: dict[str, Any], key: str, default: int) -> int:
    value = options.get(key)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


@dataclass(frozen=True)
class WorkspaceBudget:
    """Token budgets of one researcher run (see the module doc)."""

    total: int  # report view + the last action's calls and results
    report: int  # cap of the report view
    source: int  # cap of one page or passage in the results
    action: int = 0  # explicit cap of the results (option `action_token_cap`); 0: none beyond the total

    def results_room(self, view_tokens: int, calls_tokens: int) -> int:
        """What the last action's results may take once the report view and the calls are in."""
        room = max(MIN_RESULTS, self.total - view_tokens - calls_tokens)
        return min(room, self.action) if self.action else room


def plan_budget(*, window: int, fixed: int, options: dict[str, Any]) -> WorkspaceBudget:
    """The budget for a run whose fixed prompt part (system prompt, task, tool schemas) is `fixed` tokens.

    The answer keeps the room the client reserves for it (a quarter of a small window, ANSWER_RESERVE of
    a large one) and the client's safety margin; the workspace gets at most what is left, so a round
    never needs the client to cut it. On a window too small for MIN_WORKSPACE the client's context
    fitting shrinks the prompt further (research.llm.fit)."""
    reserve = min(ANSWER_RESERVE, window // 4)
    margin = 16 + window // 100
    room = window - fixed - reserve - margin
    total = max(MIN_WORKSPACE, min(option_cap(options, "workspace_token_cap", WORKSPACE_TOKEN_CAP), room))
    report = min(option_cap(options, "report_token_cap", total // REPORT_SHARE), total // 2)
    source = max(MIN_RESULTS, min(option_cap(options, "source_token_cap", SOURCE_TOKEN_CAP), total - report))
    return WorkspaceBudget(total=total, report=report, source=source, action=option_cap(options, "action_token_cap", 0))


@dataclass(frozen=True)
class Part:
    """One block of a report: a heading, a paragraph, a list item, a table…, as its source lines."""

    text: str
    start: int  # first source line
    end: int  # line after the last
    heading: bool = False
    item: bool = False
    section: str = ""  # the heading it stands under ("" before the first)


def report_parts(text: str) -> list[Part]:
    """The report's top-level blocks in order, each list item a part of its own (markdown-it's block map)."""
    source = normalized(text)
    lines = source.split("\n")
    tokens, _ = parse(source)
    parts: list[Part] = []
    section = ""
    for token in tokens:
        if token.map is None or token.nesting == -1:
            continue
        container = token.type in ("bullet_list_open", "ordered_list_open")
        if (token.level == 0 and not container) or (token.level == 1 and token.type == "list_item_open"):
            start, end = token.map
            body = "\n".join(lines[start:end]).rstrip()
            if body.strip():
                heading = token.type == "heading_open"
                parts.append(Part(body, start, end, heading=heading, item=token.type == "list_item_open",
                                  section=section))
                section = body if heading else section
    return parts


def join_parts(parts: list[Part]) -> str:
    """Parts back into Markdown: blocks that were adjacent stay so (a list stays one list), others get a blank line."""
    out = ""
    for index, part in enumerate(parts):
        if index:
            out += "\n" if part.start == parts[index - 1].end and part.item else "\n\n"
        out += part.text
    return out


@lru_cache(maxsize=1)
def _note_openings() -> tuple[str, ...]:
    """How the compaction notes begin in each language (what both fragments share before the first
    placeholder): a part that begins so is a note, not content."""
    openings = []
    for locale in ("en-US", "zh-CN"):
        texts = [load_fragment(NOTE, locale).split("{", 1)[0], load_fragment(PLAIN_NOTE, locale)]
        openings.append(os.path.commonprefix(texts).strip())
    return tuple(openings)


def is_note(part: Part) -> bool:
    return part.text.lstrip().startswith(_note_openings())


def cite_list(numbers: list[int]) -> str:
    """`[1-4, 7, 9-10]`: sorted, runs as ranges (the citation grammar reads ranges of up to 20)."""
    runs: list[list[int]] = []
    for number in sorted(set(numbers)):
        if runs and number == runs[-1][1] + 1 and number - runs[-1][0] < 20:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return "[" + ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) + "]"


@dataclass
class Memory:
    """The researcher's evolving report: as the model last wrote it, as the workspace shows it, and the
    parts compaction moved out of the view (with the citation numbers each carries)."""

    llm: ChatModel
    locale: str
    cap: int
    text: str = ""
    view: str = ""
    archive: dict[str, Part] = field(default_factory=dict)  # by text, in the order they were moved out
    compactions: int = 0  # rounds whose report had to be compacted

    def update(self, text: str) -> None:
        self.text = text
        self.view = self.compact(text)

    def note(self, shown: str, pending: tuple[int, ...] = ()) -> str:
        """The compaction note for a view showing `shown`: the archived (and `pending`) citations it lacks,
        or, when it lacks none but does not show an archived part, that parts were moved out."""
        archived = {n for part in self.archive.values() for n in citation_numbers(part.text)} | set(pending)
        missing = sorted(archived - set(citation_numbers(shown)))
        if missing:
            return load_fragment(NOTE, self.locale, cited=cite_list(missing))
        hidden = any(not part.heading and part.text not in shown for part in self.archive.values())
        return load_fragment(PLAIN_NOTE, self.locale) if hidden else ""

    def compact(self, text: str) -> str:
        """`text` within `cap` tokens: leading headings, the note, then the newest parts that fit."""
        parts = [p for p in report_parts(text) if not is_note(p)]
        body = join_parts(parts)
        note = self.note(body)
        if self.llm.count_tokens(body) + self.llm.count_tokens(note) <= self.cap:
            return join_parts(_with_note(parts, note))
        self.compactions += 1
        # The leading headings (the report's title) stay on top while they take at most a quarter.
        lead = 0
        while (lead < len(parts) and parts[lead].heading
               and self.llm.count_tokens(join_parts(parts[: lead + 1])) <= self.cap // 4):
            lead += 1
        head, rest = parts[:lead], parts[lead:]
        # The room is measured against the longest note this compaction can need (every part but the
        # newest archived), so the parts chosen still fit once the real note is written.
        worst = self.note("", tuple(n for p in rest[:-1] for n in citation_numbers(p.text)))
        room = self.cap - self.llm.count_tokens(join_parts(head)) - self.llm.count_tokens(worst) - 2
        kept: list[Part] = []
        for part in reversed(rest):
            if self.llm.count_tokens(join_parts([part, *kept])) > room:
                break
            kept.insert(0, part)
        dropped = rest[: len(rest) - len(kept)]
        # The kept parts stay under the heading they stood under, when it fits (not under the lead's).
        under = next((i for i in range(len(dropped) - 1, -1, -1) if dropped[i].heading), -1)
        if kept and not kept[0].heading and under >= 0 and (
                self.llm.count_tokens(join_parts([dropped[under], *kept])) <= room):
            kept.insert(0, dropped.pop(under))
        if not kept and rest:  # not even the newest part fits: show its head, archive it whole
            newest = rest[-1]
            kept = [Part(truncate_tokens(self.llm, newest.text, max(room, 32)), newest.start, newest.end,
                         item=newest.item)]
        for part in dropped:
            self.archive.setdefault(part.text, part)
        shown = join_parts(head + kept)
        return join_parts(_with_note(head + kept, self.note(shown), lead))

    def _cut_copy(self, part: Part) -> bool:
        """Whether `part` is the head of an archived part, as a view too small for it showed it."""
        if not part.text.endswith(TRUNCATED):
            return False
        head = part.text.removesuffix(TRUNCATED).rstrip()
        return bool(head) and any(text.startswith(head) for text in self.archive)

    def restore(self, final: str) -> str:
        """The final step report with the archived parts it does not hold added back (the model was told
        they would be, and never saw them again): right after the heading they stood under when the
        report still has it, else where the note stands (with that heading), else at its end. The note
        goes, and so does a part the view showed cut (its whole text comes back)."""
        if not self.archive:
            return final
        parts = [p for p in report_parts(final) if not self._cut_copy(p)]
        body = join_parts([p for p in parts if not is_note(p)])
        headings = {p.text for p in parts if p.heading}
        under: dict[str, list[Part]] = {}  # heading in the final report -> parts going back under it
        loose: list[Part] = []  # parts whose heading is gone, with that heading
        for part in self.archive.values():
            if part.heading or part.text in body:
                continue
            if part.section in headings:
                under.setdefault(part.section, []).append(part)
                continue
            heading = self.archive.get(part.section)
            if heading is not None and heading not in loose:
                loose.append(heading)
            loose.append(part)
        if not under and not loose and len(parts) == len(report_parts(final)) and not any(is_note(p) for p in parts):
            return final  # nothing to add back: the model's text as it wrote it
        out: list[Part] = []
        for part in parts:
            if is_note(part):
                out += [Part(_restored(loose), -2, -1)] if loose else []
                loose = []
                continue
            out.append(part)
            if part.heading and part.text in under:
                out.append(Part(_restored(under.pop(part.text)), -2, -1))
        if loose:
            out.append(Part(_restored(loose), -2, -1))
        return join_parts(out)


def _restored(parts: list[Part]) -> str:
    """Archived parts as one Markdown block: consecutive list items stay one list."""
    out = ""
    for index, part in enumerate(parts):
        if index:
            out += "\n" if part.item and parts[index - 1].item else "\n\n"
        out += part.text
    return out


def _with_note(parts: list[Part], note: str, lead: int | None = None) -> list[Part]:
    """The note after the leading headings, or the first `lead` parts (its own block, never joined to a list)."""
    if not note:
        return parts
    if lead is None:
        lead = 0
        while lead < len(parts) and parts[lead].heading:
            lead += 1
    return [*parts[:lead], Part(note, -2, -1), *parts[lead:]]
