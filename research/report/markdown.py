"""The one Markdown parser of the project, and where each inline construct sits in the source.

`parser()` is the configuration every reader and the HTML renderer share (CommonMark, tables,
strikethrough, raw HTML off, linkify off): a check that reads the report with another
configuration would see other links than the page shows. markdown-it gives block tokens their
source lines (`token.map`) but inline tokens no offsets, so the inline rules that make links,
images, autolinks and code spans are wrapped to record where they matched (`token.meta["span"]`),
and `inline_spans` maps those offsets from the inline token's content back to the source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from research import textre
from research.report.rawhtml import raw_html_rule

# CommonMark's backslash escapes: a backslash before any ASCII punctuation character is that character.
_ESCAPE = textre.compile(r"\\([!-/:-@\[-`{-~])")


def unescaped(text: str) -> str:
    """`text` with Markdown's backslash escapes resolved, as a reader sees it: a page stored as Markdown
    (trafilatura escapes ~ _ * [ ] …) says "RESTIC\\_PASSWORD\\_FILE" and "backup \\~"."""
    return _ESCAPE.sub(r"\1", text) if "\\" in text else text


def identifier_join(text: str, i: int) -> bool:
    """The underscore at `i` joins an identifier (RESTIC_PASSWORD_FILE, set_broker): no emphasis mark."""
    return text[i] == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()

__all__ = [
    "Block", "InlineSpan", "MarkdownIt", "SourceMap", "StateCore", "Token", "blocks", "code_ranges", "inline_spans",
    "new_parser",
    "identifier_join", "normalized", "parse", "parser", "unescaped",
]

_SPANNED = ("link", "image", "autolink", "backticks")


def _spanned(rule: Callable[[StateInline, bool], bool], name: str) -> Callable[[StateInline, bool], bool]:
    def wrapped(state: StateInline, silent: bool) -> bool:
        start, count = state.pos, len(state.tokens)
        if state.pending:
            count += 1  # the rule's first push flushes the pending text into a token of its own first
        matched = rule(state, silent)
        if matched and not silent and len(state.tokens) > count:
            label: tuple[int, int] | None = None
            opener = start if name == "link" else start + 1
            if name in ("link", "image") and state.src[start : opener + 1].endswith("["):
                # Found again only for a link that matched (a failed `[` costs nothing extra).
                end, state.pos = state.pos, start
                label_end = state.md.helpers.parseLinkLabel(state, opener, name == "link")
                state.pos = end
                label = (opener + 1, label_end) if label_end >= 0 else None
            state.tokens[count].meta = {**(state.tokens[count].meta or {}), "span": (start, state.pos), "label": label}
        return matched

    return wrapped


def new_parser(*, every_link: bool = False) -> MarkdownIt:
    """A fresh parser in the project's configuration (the renderer adds its own core and render rules).

    `every_link`: also read `[t](javascript:…)` and other destinations markdown-it refuses to link
    as links, so the link policy can unlink them in the Markdown too (another viewer of report.md
    might link them); the renderer keeps markdown-it's refusal.
    """
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.core.ruler.push("research_raw_html", raw_html_rule)
    rules = {rule.name: rule.fn for rule in md.inline.ruler.__rules__}
    for name in _SPANNED:
        md.inline.ruler.at(name, _spanned(rules[name], name))  # type: ignore[arg-type]
    if every_link:
        md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md


@lru_cache(maxsize=2)
def parser(*, every_link: bool = False) -> MarkdownIt:
    return new_parser(every_link=every_link)


def parse(md: str, *, every_link: bool = False) -> tuple[list[Token], dict[str, Any]]:
    """The block tokens of `md` (inline children parsed) and markdown-it's env (reference definitions).

    The last few parses of texts up to _CACHED_CHARS are kept: the check, the edit view and the
    references reader read the same text several times. Callers must not change the tokens.
    """
    if len(md) > _CACHED_CHARS:  # a long report's tokens take much memory: parsed again instead
        env: dict[str, Any] = {}
        return parser(every_link=every_link).parse(md, env), env
    return _parse(md, every_link)


_CACHED_CHARS = 120_000


@lru_cache(maxsize=6)
def _parse(md: str, every_link: bool) -> tuple[list[Token], dict[str, Any]]:
    env: dict[str, Any] = {}
    return parser(every_link=every_link).parse(md, env), env


def normalized(md: str) -> str:
    """The text as markdown-it reads it (its own normalize rule): offsets below refer to this text."""
    return md.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


@dataclass(frozen=True)
class Block:
    """One inline token with the kind of block around it (paragraph, heading, cell)."""

    token: Token
    kind: str  # paragraph | heading | cell


def blocks(tokens: list[Token]) -> Iterator[Block]:
    for index, token in enumerate(tokens):
        if token.type != "inline" or token.map is None:
            continue
        before = tokens[index - 1].type if index else ""
        kind = "heading" if before == "heading_open" else "cell" if before in ("th_open", "td_open") else "paragraph"
        yield Block(token, kind)


@dataclass(frozen=True)
class InlineSpan:
    """A link / image / autolink / code span in source offsets; `label` is the link text's range."""

    token: Token
    start: int
    end: int
    label: tuple[int, int] | None


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


class SourceMap:
    """Offsets of each inline token's content in the normalized source, found once per line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = _line_starts(text)
        self.cursor: dict[int, int] = {}  # per source line: where the last table cell ended

    def line(self, number: int) -> str:
        start = self.starts[number]
        end = self.starts[number + 1] - 1 if number + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]

    def offsets(self, block: Block) -> list[tuple[int, int]] | None:
        """For each line of the token's content: (offset in content, offset in source); None if lost."""
        token = block.token
        assert token.map is not None
        first = token.map[0]
        out: list[tuple[int, int]] = []
        content_pos = 0
        for i, piece in enumerate(token.content.split("\n")):
            number = first + i
            if number >= len(self.starts):
                return None
            line = self.line(number)
            found = self._find(line, piece, number, block.kind)
            if found < 0:
                stripped = piece.lstrip(" ")  # a tab expanded to blanks inside a list item
                found = self._find(line, stripped, number, block.kind)
                if found < 0:
                    return None
                found -= len(piece) - len(stripped)
            out.append((content_pos, self.starts[number] + found))
            content_pos += len(piece) + 1
        return out

    def _find(self, line: str, piece: str, number: int, kind: str) -> int:
        if kind == "paragraph":
            if line.endswith(piece):
                return len(line) - len(piece)
            bare = line.rstrip()
            if bare.endswith(piece):
                return len(bare) - len(piece)
            return -1
        found = line.find(piece, self.cursor.get(number, 0))
        if found >= 0 and kind == "cell":
            self.cursor[number] = found + len(piece)
        return found


def to_source(offsets: list[tuple[int, int]], pos: int) -> int:
    """A content offset through the per-line table of `SourceMap.offsets`."""
    base = offsets[0]
    for entry in offsets:
        if entry[0] > pos:
            break
        base = entry
    return base[1] + pos - base[0]


def inline_spans(block: Block, source: SourceMap) -> list[InlineSpan] | None:
    """The spanned children of one inline token, outermost first, in source offsets (None: unmappable)."""
    children = [c for c in block.token.children or [] if c.meta and "span" in c.meta]
    if not children:
        return []
    offsets = source.offsets(block)
    if offsets is None:
        return None
    out: list[InlineSpan] = []
    for child in children:
        start, end = child.meta["span"]
        label = child.meta.get("label")
        out.append(InlineSpan(
            child, to_source(offsets, start), to_source(offsets, end),
            (to_source(offsets, label[0]), to_source(offsets, label[1])) if label else None,
        ))
    return out


def code_ranges(md: str) -> list[tuple[int, int]]:
    """Source ranges of code (fenced and indented blocks, inline code spans) in `normalized(md)`, in order.

    What markdown-it reads as code, nothing else: text between escaped backticks is text.
    """
    text = normalized(md)
    tokens, _ = parse(text)
    source = SourceMap(text)
    ranges: list[tuple[int, int]] = []
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map:
            start = source.starts[token.map[0]]
            end = source.starts[token.map[1]] if token.map[1] < len(source.starts) else len(text)
            ranges.append((start, end))
    for block in blocks(tokens):
        for span in inline_spans(block, source) or []:
            if span.token.type == "code_inline":
                ranges.append((span.start, span.end))
    return sorted(ranges)
