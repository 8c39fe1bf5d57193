"""The report, parsed once: sections → blocks (sentences with their citations, lists, tables, figures) + references.

Every derived output (slides, podcast script, the PDF's title) reads this structure instead of
re-parsing Markdown, so a citation stays on the sentence that carries it. Markdown is read with
the project's one parser (`research.report.markdown`); citation markers with the project's
citation grammar (`research.report.citations.find_citation_markers`), sentences with its one
splitter (`research.report.sentences`).

Sentence rule: a marker belongs to the sentence it sits in, and markers right after a sentence's
final punctuation ("… packs. [3]", "…瓶颈。[2]") belong to that sentence, not to the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from research import textre
from research.agents.text import detect_locale
from research.report.citations import find_citation_markers
from research.report.links import safe_figure_name
from research.report.markdown import Token, parser
from research.report.references import is_references_heading as is_reference_heading
from research.report.sentences import _CJK, _SENTINEL, Sentence, _clean, split_marked_text

_LATIN_WORD = textre.compile(r"[A-Za-z0-9][A-Za-z0-9'’.,%$-]*")
_HIDDEN_TAGS = frozenset({"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript"})
# Sentences about the report rather than about the topic (engine notes, empty-section fillers).
_ASIDE = textre.compile(
    r"produced by the offline engine|without a language model|already (?:appear|listed|shown)|"
    r"no (?:relevant )?sentences? (?:were|was) found|nothing (?:relevant )?(?:was )?found for this step|"
    r"离线引擎|未使用语言模型|已在上文|本步骤未找到|没有找到相关",
    textre.I,
)


@dataclass(frozen=True)
class Paragraph:
    sentences: tuple[Sentence, ...]
    aside: bool = False  # an all-italic note or an engine/filler remark: not content to present or read


@dataclass(frozen=True)
class ListBlock:
    items: tuple[tuple[Sentence, ...], ...]  # each item's sentences
    ordered: bool = False


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    citations: tuple[int, ...] = ()


@dataclass(frozen=True)
class Figure:
    name: str  # a safe file name inside the job's figures directory
    caption: str


@dataclass(frozen=True)
class CodeBlock:
    text: str
    language: str = ""


Block = Paragraph | ListBlock | Table | Figure | CodeBlock


@dataclass
class Section:
    title: str  # "" for the text before the first section heading
    level: int
    blocks: list[Block] = field(default_factory=list)

    def sentences(self) -> list[Sentence]:
        """Content sentences in reading order: paragraphs (asides left out) and list items."""
        out: list[Sentence] = []
        for block in self.blocks:
            if isinstance(block, Paragraph) and not block.aside:
                out.extend(block.sentences)
            elif isinstance(block, ListBlock):
                out.extend(s for item in block.items for s in item)
        return out

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]


@dataclass(frozen=True)
class Reference:
    number: int
    title: str
    url: str = ""


@dataclass
class ReportDocument:
    title: str
    locale: str
    sections: list[Section]  # the lead (title "") first when there is one; references excluded
    references: list[Reference]

    def sentences(self) -> list[Sentence]:
        return [s for section in self.sections for s in section.sentences()]

    def reference(self, number: int) -> Reference | None:
        return next((r for r in self.references if r.number == number), None)

    @property
    def words(self) -> float:
        return sum(s.words for s in self.sentences())


def is_aside(text: str) -> bool:
    return bool(_ASIDE.search(text))


# ---------------------------------------------------------------- inline tokens


@dataclass
class _Inline:
    text: str
    markers: list[tuple[int, ...]]
    images: list[Figure]
    all_emphasis: bool  # every visible character sat inside *…* / **…**


def _read_inline(token: Token) -> _Inline:
    parts: list[str] = []
    markers: list[tuple[int, ...]] = []
    images: list[Figure] = []
    depth = 0
    link = 0
    plain_outside = False
    hidden = ""  # inside raw <script>/<style>/…: that text is never content
    for child in token.children or []:
        kind = child.type
        if kind == "html_inline":
            tag = textre.match(r"<(/?)([A-Za-z]+)", child.content)
            if tag and tag.group(2).lower() in _HIDDEN_TAGS:
                hidden = "" if tag.group(1) else tag.group(2).lower()
            continue
        if hidden:
            continue
        if kind in {"em_open", "strong_open"}:
            depth += 1
        elif kind in {"em_close", "strong_close"}:
            depth -= 1
        elif kind == "link_open":
            link += 1
        elif kind == "link_close":
            link -= 1
        elif kind in {"softbreak", "hardbreak"}:
            parts.append(" ")
        elif kind == "code_inline":
            parts.append(child.content.replace(_SENTINEL, ""))
            plain_outside |= depth == 0
        elif kind == "image":
            name = safe_figure_name(str(child.attrGet("src") or ""))
            if name:
                images.append(Figure(name, "".join(c.content for c in child.children or []).strip()))
        elif kind == "text":
            content = child.content.replace(_SENTINEL, "")
            plain_outside |= depth == 0 and bool(content.strip())
            if link:  # a link's text is never a citation
                parts.append(content)
                continue
            pos = 0
            for marker in find_citation_markers(content):
                parts.append(content[pos : marker.start])
                parts.append(_SENTINEL)
                markers.append(marker.numbers)
                pos = marker.end
            parts.append(content[pos:])
    text = "".join(parts)
    visible = bool(text.replace(_SENTINEL, "").strip())
    return _Inline(text, markers, images, visible and not plain_outside and not markers)


def _plain(token: Token) -> str:
    inline = _read_inline(token)
    return _clean(inline.text)


# ---------------------------------------------------------------- blocks


def _reference(text_token: Token) -> Reference | None:
    """`[n] [Title](url)` or `[n] Title (knowledge base)` from a reference list item."""
    match = textre.match(r"\s*\[(\d{1,4})\]\s*", text_token.content)
    if not match:
        return None
    title, url = "", ""
    children = text_token.children or []
    for index, child in enumerate(children):
        if child.type == "link_open":
            url = str(child.attrGet("href") or "")
            title = "".join(c.content for c in children[index + 1 :] if c.type == "text").strip()
            break
    if not title:
        title = text_token.content[match.end() :].strip()
    return Reference(int(match.group(1)), textre.sub(r"\s+", " ", title), url)


def parse_report(md: str, *, locale: str | None = None) -> ReportDocument:
    """Read the report Markdown once into a `ReportDocument`."""
    tokens = parser().parse(md or "")
    title = ""
    sections: list[Section] = [Section("", 1)]
    references: list[Reference] = []
    in_refs = False
    list_stack: list[tuple[bool, list[tuple[Sentence, ...]]]] = []
    item_sentences: list[list[Sentence]] = []
    table: list[list[str]] | None = None
    row: list[str] | None = None
    table_cites: list[int] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        current = sections[-1]
        if kind == "heading_open":
            inline = tokens[index + 1]
            text = _plain(inline)
            level = int(token.tag[1])
            if level == 1 and not title:
                title = text
            else:
                in_refs = is_reference_heading(text)
                if not in_refs:
                    sections.append(Section(text, level))
            index += 3
            continue
        if in_refs:
            if kind == "inline":
                ref = _reference(token)
                if ref is not None:
                    references.append(ref)
            index += 1
            continue
        if kind in {"bullet_list_open", "ordered_list_open"}:
            list_stack.append((kind == "ordered_list_open", []))
        elif kind in {"bullet_list_close", "ordered_list_close"}:
            ordered, items = list_stack.pop()
            if items and not list_stack:
                current.blocks.append(ListBlock(tuple(items), ordered))
            elif items:  # a nested list: its items join the outer list
                list_stack[-1][1].extend(items)
        elif kind == "list_item_open":
            item_sentences.append([])
        elif kind == "list_item_close":
            sentences = item_sentences.pop()
            if sentences and list_stack:
                list_stack[-1][1].append(tuple(sentences))
        elif kind == "table_open":
            table, table_cites = [], []
        elif kind == "table_close" and table is not None:
            if table:
                current.blocks.append(Table(tuple(table[0]), tuple(tuple(r) for r in table[1:]), tuple(table_cites)))
            table = None
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None and table is not None:
            table.append(row)
            row = None
        elif kind in {"fence", "code_block"}:
            current.blocks.append(CodeBlock(token.content.rstrip("\n"), token.info.strip()))
        elif kind == "inline":
            read = _read_inline(token)
            if row is not None:
                row.append(_clean(read.text))
                table_cites.extend(n for m in read.markers for n in m if n not in table_cites)
            else:
                sentences = split_marked_text(read.text, read.markers)
                if item_sentences:
                    item_sentences[-1].extend(s for s in sentences if not is_aside(s.text))
                elif sentences:
                    aside = read.all_emphasis or all(is_aside(s.text) for s in sentences)
                    current.blocks.append(Paragraph(tuple(sentences), aside))
                current.blocks.extend(read.images)
        index += 1
    sections = [s for s in sections if s.blocks or s.title]
    if not title:
        title = next((s.title for s in sections if s.title), "") or "Report"
    body_text = " ".join(s.text for section in sections for s in section.sentences())
    locale = locale or detect_locale(title + " " + body_text[:2000])
    return ReportDocument(title=title, locale=locale, sections=sections, references=references)


def is_chinese_text(text: str) -> bool:
    """Chinese when CJK characters outnumber Latin words (a sentence's own language, not the report's)."""
    return len(_CJK.findall(text)) >= max(1, len(_LATIN_WORD.findall(_CJK.sub(" ", text))))
