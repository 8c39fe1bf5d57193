"""Derive a slide outline and a two-host podcast script from a Markdown report, with no model.

Used by the `render` command and by the offline engine; the LLM engine may write its
own outline / script instead. Everything here is extractive: it reorganizes the
report's sentences, it never invents content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

from research.agents.text import is_chinese
from research.agents.types import PodcastLine, PodcastScript, Slide, SlideOutline
from research.render.html import (
    is_reference_heading,
    markdown_sections,
    markdown_title,
    safe_figure_name,
    strip_citations,
)

MAX_BULLETS = 5
MAX_SLIDES_PER_SECTION = 3
MAX_BULLET_CHARS = 170
MAX_TABLE_ROWS = 8  # header included
MAX_TABLE_COLS = 6
MAX_NOTES_CHARS = 1500

_EN_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[A-Z0-9\"“(\[])")
_ZH_SENTENCE_END = re.compile(r"(?<=[。！？；!?])\s*")
_REFERENCE_ITEM = re.compile(r"^\s*[-*+]\s*\[(\d{1,4})\]\s*(.*)$")


@dataclass
class SectionContent:
    """The pieces of one section that the slide and podcast builders use."""

    title: str
    level: int
    paragraphs: list[str] = field(default_factory=list)  # plain text, citations kept
    items: list[str] = field(default_factory=list)  # list items, plain text, citations kept
    tables: list[list[list[str]]] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (file name, caption)


def _texts(lang_zh: bool, en: str, zh: str) -> str:
    return zh if lang_zh else en


def _inline_plain(token: Token) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in {"text", "code_inline"}:
            parts.append(child.content)
        elif child.type in {"softbreak", "hardbreak"}:
            parts.append(" ")
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def _images(token: Token) -> list[tuple[str, str]]:
    found = []
    for child in token.children or []:
        if child.type == "image":
            name = safe_figure_name(str(child.attrGet("src") or ""))
            if name:
                found.append((name, "".join(c.content for c in child.children or []).strip()))
    return found


def parse_section(title: str, level: int, body: str) -> SectionContent:
    """Sort a section's Markdown into paragraphs, list items, tables and figures (code is skipped)."""
    content = SectionContent(title=title, level=level)
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    in_list = 0
    row: list[str] | None = None
    table: list[list[str]] | None = None
    for token in tokens:
        kind = token.type
        if kind in {"bullet_list_open", "ordered_list_open"}:
            in_list += 1
        elif kind in {"bullet_list_close", "ordered_list_close"}:
            in_list -= 1
        elif kind == "table_open":
            table = []
        elif kind == "table_close" and table is not None:
            content.tables.append(table)
            table = None
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None and table is not None:
            table.append(row)
            row = None
        elif kind == "inline":
            text = _inline_plain(token)
            if row is not None:
                row.append(text)
                continue
            content.figures.extend(_images(token))
            if not text:
                continue
            (content.items if in_list else content.paragraphs).append(text)
    return content


def report_sections(md: str) -> tuple[str, list[SectionContent]]:
    """The title and the content sections of a report (references excluded; ### folded into their ##)."""
    title = markdown_title(md, default="Report")
    sections: list[SectionContent] = []
    for section in markdown_sections(md):
        if is_reference_heading(section.title):
            continue
        if section.level <= 1 and not section.body.strip():
            continue
        sections.append(parse_section(section.title if section.level > 1 else "", section.level, section.body))
    return title, sections


def split_sentences(text: str, locale: str) -> list[str]:
    pattern = _ZH_SENTENCE_END if is_chinese(locale) or re.search(r"[。！？]", text) else _EN_SENTENCE_END
    return [s.strip() for s in pattern.split(text) if s and s.strip()]


def shorten(text: str, limit: int = MAX_BULLET_CHARS) -> str:
    """Cut long text at a word (or, for CJK, character) boundary and mark the cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:，；：") + "…"


def reference_items(md: str) -> list[str]:
    """The `[n] Title — url` lines of the references section, as plain text."""
    out: list[str] = []
    for section in markdown_sections(md):
        if not is_reference_heading(section.title):
            continue
        for line in section.body.splitlines():
            match = _REFERENCE_ITEM.match(line)
            if not match:
                continue
            rest = match.group(2)
            link = re.match(r"\[([^\]]*)\]\(([^)\s]+)\)", rest)
            label = f"{link.group(1)} — {link.group(2)}" if link else rest
            out.append(f"[{match.group(1)}] {label.strip()}")
    return out


def _join(parts: list[str]) -> str:
    """Join sentences: Chinese sentences need no space between them."""
    out = ""
    for part in parts:
        part = part.strip()
        if out and part and not re.search(r"[。！？；：，]$", out):
            out += " "
        out += part
    return out


def _notes(sentences: list[str], fallback: list[str]) -> str:
    text = _join([strip_citations(s) for s in (sentences or fallback)])
    return shorten(text, MAX_NOTES_CHARS)


def slide_outline_from_markdown(md: str, *, locale: str = "en-US") -> SlideOutline:
    """One idea per slide: each section's key sentences (≤ 5 per slide), then its tables and figures."""
    zh = is_chinese(locale)
    title, sections = report_sections(md)
    slides: list[Slide] = []
    for section in sections:
        name = section.title or _texts(zh, "Overview", "概述")
        sentences = [s for p in section.paragraphs for s in split_sentences(p, locale)]
        if section.items:
            bullets = section.items
            talk = section.paragraphs + section.items
        else:
            # Lead sentences of every paragraph first: they usually carry the point.
            per_para = [split_sentences(p, locale) for p in section.paragraphs]
            bullets = [s[0] for s in per_para if s] + [x for s in per_para for x in s[1:]]
            talk = sentences
        full = [b for b in bullets if b.strip()][: MAX_BULLETS * MAX_SLIDES_PER_SECTION]
        for start in range(0, len(full), MAX_BULLETS):
            chunk = full[start : start + MAX_BULLETS]
            suffix = "" if start == 0 else _texts(zh, " (cont.)", "（续）")
            # The talk track: the whole section for a one-slide section, else the full sentences behind the bullets.
            notes = _notes(talk if len(full) <= MAX_BULLETS else chunk, chunk)
            slides.append(Slide(title=name + suffix, bullets=[shorten(b) for b in chunk], notes=notes))
        for table in section.tables:
            rows = [r[:MAX_TABLE_COLS] for r in table[:MAX_TABLE_ROWS]]
            intro = _texts(zh, f"Table from the section “{name}”.", f"本表来自“{name}”一节。")
            slides.append(Slide(title=name, table=rows, notes=_join([intro, _notes(sentences[:3], [])])))
        for figure, caption in section.figures:
            notes = caption or _texts(zh, f"A figure for {name}.", f"“{name}”的配图。")
            slides.append(Slide(title=caption or name, figure=figure, notes=_join([notes, _notes(sentences[:2], [])])))
    subtitle = _texts(zh, "Research report", "研究报告")
    return SlideOutline(title=title, subtitle=subtitle, slides=slides)


def _lines_for_section(section: SectionContent, locale: str, max_sentences: int) -> list[str]:
    sentences = [strip_citations(s) for p in section.paragraphs for s in split_sentences(p, locale)]
    sentences += [strip_citations(i) for i in section.items]
    sentences = [s for s in sentences if len(s) > 1]
    return sentences[:max_sentences]


def podcast_script_from_markdown(md: str, *, locale: str = "en-US", max_sentences: int = 4) -> PodcastScript:
    """Host and guest alternate: intro, one segment per section (≤ `max_sentences` sentences), outro."""
    zh = is_chinese(locale)
    title, sections = report_sections(md)
    title = strip_citations(title)
    lines: list[PodcastLine] = []
    intro = _texts(zh, "Introduction", "开场")
    outro = _texts(zh, "Wrap-up", "结语")

    def say(speaker: str, text: str, section: str) -> None:
        text = re.sub(r"\s+", " ", text).strip()
        if text:
            lines.append(PodcastLine(speaker=speaker, text=text, section=section))  # type: ignore[arg-type]

    say(
        "host",
        _texts(
            zh,
            f"Welcome to the show. Today we are looking at: {title}.",
            f"欢迎收听本期节目。今天我们来聊聊：{title}。",
        ),
        intro,
    )
    untitled = [s for s in sections if not s.title]
    opener = _lines_for_section(untitled[0], locale, 1) if untitled else []
    say(
        "guest",
        opener[0] if opener else _texts(zh, "Thanks. There is a lot in this report.", "谢谢。这份报告内容很丰富。"),
        intro,
    )
    asks = (
        _texts(zh, "Let's talk about {t}. What did the research find?", "我们来谈谈“{t}”。研究发现了什么？"),
        _texts(zh, "Next up: {t}. What stands out?", "接下来是“{t}”。有什么值得注意的？"),
        _texts(zh, "Now, {t}. Walk us through it.", "再来看“{t}”。能给我们讲讲吗？"),
    )
    follow_up = _texts(zh, "Interesting. What else?", "很有意思。还有呢？")
    titled = [s for s in sections if s.title]
    for number, section in enumerate(titled):
        sentences = _lines_for_section(section, locale, max_sentences)
        if not sentences:
            continue
        say("host", asks[number % len(asks)].format(t=section.title), section.title)
        half = (len(sentences) + 1) // 2 if len(sentences) > 2 else len(sentences)
        say("guest", _join(sentences[:half]), section.title)
        if sentences[half:]:
            say("host", follow_up, section.title)
            say("guest", _join(sentences[half:]), section.title)
    say(
        "host",
        _texts(zh, "That's all for today. Thanks for joining us.", "今天的节目就到这里，感谢您的收听。"),
        outro,
    )
    say(
        "guest",
        _texts(zh, "Thanks for having me. The sources are listed in the report.", "谢谢邀请。所有来源都列在报告里。"),
        outro,
    )
    return PodcastScript(locale=locale, title=title, lines=lines)
