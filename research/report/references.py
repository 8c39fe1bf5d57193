"""Which heading starts a references list, where those lists are, and what their entries say.

The one rule, in English and Chinese: a heading (any level, optionally numbered "1." / "IV)" and
ending in ":") or a paragraph that is only bold text, whose words name references, sources, works
cited, a bibliography or a reference list. The app writes the references list itself (from the
source registry), so every list under such a heading is the model's or the user's copy: it is
read (to know what the user's `[n]` meant) and then replaced, never kept beside the real one.
"""

from __future__ import annotations

from dataclasses import dataclass

from research.report.markdown import Token, parse

__all__ = [
    "Entry", "drop_lines", "is_references_heading", "references_entries", "references_ranges", "strip_references",
]

_NAMES = frozenset(
    {
        "references", "reference", "reference list", "list of references", "sources", "source", "sources cited",
        "bibliography", "works cited", "citations", "literature", "literature cited", "further reading",
        "参考文献", "参考资料", "参考来源", "引用来源", "资料来源", "来源", "引用", "文献", "引用文献", "参考",
    }
)  # fmt: skip
_NUMBERING = "0123456789.)ivxIVX、 \t"


def is_references_heading(title: str) -> bool:
    """`title` (a heading's plain text) names a references list: "Works Cited", "## 1. References", "来源："."""
    text = title.strip().strip("*_").strip().rstrip(":：").strip()
    head, _, rest = text.partition(" ")
    if rest and head and all(c in _NUMBERING for c in head):  # "1. References", "IV) Sources"
        text = rest.strip()
    elif text[:1].isdigit() and "、" in text[:5]:  # "一、参考文献" style numbering with digits
        text = text.split("、", 1)[1]
    return " ".join(text.lower().split()) in _NAMES


def _inline_text(token: Token) -> str:
    return "".join(c.content for c in token.children or [] if c.type in ("text", "code_inline"))


def _bold_only(token: Token) -> bool:
    children = [c for c in token.children or [] if not (c.type == "text" and not c.content.strip())]
    return len(children) >= 3 and children[0].type == "strong_open" and children[-1].type == "strong_close"


@dataclass(frozen=True)
class Entry:
    """One entry of a references list as the reader saw it: `[n] [Title](url)` or `[n] Title (knowledge base)`."""

    number: int
    title: str
    url: str = ""


def _sections(tokens: list[Token]) -> list[tuple[int, int, int]]:
    """(index of the heading token, its level, index where the section ends) for each references heading."""
    found: list[tuple[int, int, int]] = []
    for index, token in enumerate(tokens):
        if token.level != 0 or index + 1 >= len(tokens):
            continue
        if token.type == "heading_open":
            level = int(token.tag[1])
        elif token.type == "paragraph_open" and _bold_only(tokens[index + 1]):
            level = 7  # a bold line: its section ends at the next heading of any level
        else:
            continue
        if not is_references_heading(_inline_text(tokens[index + 1])):
            continue
        end = index + 3
        while end < len(tokens) and not (
            tokens[end].type == "heading_open" and tokens[end].level == 0 and int(tokens[end].tag[1]) <= level
        ):
            end += 1
        found.append((index, level, end))
    return found


def _listish(tokens: list[Token], index: int) -> bool:
    """A block of a references section that is part of the list: a list, or a paragraph of `[n] …` lines."""
    token = tokens[index]
    if token.type in ("bullet_list_open", "ordered_list_open"):
        return True
    if token.type == "paragraph_open":
        lines = tokens[index + 1].content.split("\n")
        return all(line.lstrip().startswith("[") and line.lstrip()[1:2].isdigit() for line in lines)
    return False


def references_ranges(md: str) -> list[tuple[int, int]]:
    """Source line ranges [start, end) to drop: each references heading and the lists under it.

    Prose under such a heading stays where it is (an edit never loses what the user wrote outside
    the list); code blocks are never headings.
    """
    tokens, env = parse(md)
    definitions = [tuple(d["map"]) for d in env.get("references", {}).values() if d.get("map")]
    ranges: list[tuple[int, int]] = []
    total = md.count("\n") + 1
    for heading, _level, end in _sections(tokens):
        heading_map = tokens[heading].map
        if heading_map:
            ranges.append((heading_map[0], heading_map[1]))
            next_map = tokens[end].map if end < len(tokens) else None
            first, last = heading_map[0], next_map[0] if next_map else total
            ranges.extend(d for d in definitions if first <= d[0] < last)  # `[1]: https://…` lines
        for index in range(heading + 3, end):
            token = tokens[index]
            if token.level == 0 and token.map and token.nesting != -1 and _listish(tokens, index):
                ranges.append(tuple(token.map))  # type: ignore[arg-type]
    return ranges


def _entry(token: Token) -> Entry | None:
    content = token.content.lstrip()
    close = content.find("]")
    if not content.startswith("[") or close < 2 or not content[1:close].strip().isdigit():
        return None
    number = int(content[1:close].strip())
    children = token.children or []
    for index, child in enumerate(children):
        if child.type == "link_open":
            title = "".join(c.content for c in children[index + 1 :] if c.type == "text").strip()
            return Entry(number, " ".join(title.split()), str(child.attrGet("href") or ""))
    rest = content[close + 1 :].strip()
    for label in ("(knowledge base)", "(知识库)"):
        rest = rest.removesuffix(label).strip()
    return Entry(number, " ".join(rest.split()))


def references_entries(md: str) -> list[Entry] | None:
    """The entries of the report's references lists, or None when it has no references heading."""
    tokens, _ = parse(md)
    sections = _sections(tokens)
    if not sections:
        return None
    entries: list[Entry] = []
    for heading, _level, end in sections:
        for index in range(heading + 3, end):
            if tokens[index].type == "inline" and index and tokens[index - 1].type == "paragraph_open":
                for line_token in _lines(tokens[index]):
                    entry = _entry(line_token)
                    if entry is not None:
                        entries.append(entry)
    return entries


def _lines(token: Token) -> list[Token]:
    """An inline token split at soft breaks (a paragraph of `[n] …` lines holds several entries)."""
    out: list[Token] = []
    current = Token("inline", "", 0)
    current.children, current.content = [], ""
    for child in token.children or []:
        if child.type in ("softbreak", "hardbreak"):
            out.append(current)
            current = Token("inline", "", 0)
            current.children, current.content = [], ""
            continue
        assert current.children is not None
        current.children.append(child)
        if child.type in ("text", "code_inline"):
            current.content += child.content
        elif child.type == "link_open":
            current.content += "\x00"  # a link's text follows; no digit can come from here
    out.append(current)
    return out


def drop_lines(md: str, ranges: list[tuple[int, int]]) -> str:
    """`md` without the given line ranges and the blank lines right after each (no gap is left behind)."""
    if not ranges:
        return md
    lines = md.split("\n")
    drop = [False] * len(lines)
    for start, end in ranges:
        for number in range(start, min(end, len(lines))):
            drop[number] = True
        while end < len(lines) and not lines[end].strip() and not drop[end]:
            drop[end] = True
            end += 1
    return "\n".join(line for line, gone in zip(lines, drop, strict=True) if not gone)


def strip_references(md: str) -> str:
    """Drop every references heading and the lists under it (see `references_ranges`)."""
    out = drop_lines(md, references_ranges(md))
    return out.rstrip() + ("\n" if md.endswith("\n") else "") if out != md else md
