"""Derive a slide outline from a report, with no model (the podcast script: research/render/podcast_script.py).

Both read the one parse of the report (`research.report.document.parse_report`): every bullet
is one report sentence carrying that sentence's own citation markers, and the podcast speaks
only content sentences (no engine notes, empty-section fillers or reference lists). Everything
here is extractive: it reorganizes the report's sentences, it never invents content.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from research import scripts, textre
from research.agents.types import Slide, SlideOutline
from research.report.citations import find_citation_markers, strip_citations
from research.report.document import ReportDocument, Section, Sentence, is_aside, parse_report
from research.report.references import is_references_heading as is_reference_heading

MAX_BULLETS = 5
MIN_CONTINUATION_ITEMS = 3  # a continuation slide with fewer items is merged into its neighbour
SLIDE_WORDS = 110  # fill a content slide up to about this many words of report text
MAX_BULLET_CHARS = 170
MIN_BULLET_CHARS = 100
SLIDE_CHARS, SLIDE_CHARS_ZH = 640, 260  # text a slide's bullets may hold before they are shortened
MAX_TABLE_ROWS = 8  # header included
MAX_TABLE_COLS = 6
MAX_NOTES_CHARS = 1500


def bilingual(zh: bool, en: str, zh_text: str) -> str:
    return zh_text if zh else en


def is_zh(locale: str) -> bool:
    return locale.lower().startswith("zh")


def shorten(text: str, limit: int = MAX_BULLET_CHARS) -> str:
    """Cut long text at a word (or, for CJK, character) boundary and mark the cut.

    Trailing citation markers are kept: the text before them is cut instead, so a shortened
    bullet still cites exactly what its sentence cited.
    """
    text = text.strip()
    if len(text) <= limit:
        return text
    markers = find_citation_markers(text)
    tail = ""
    if markers and markers[-1].end == len(text):
        start = markers[-1].start
        for marker in reversed(markers[:-1]):
            if text[marker.end : start].strip():
                break
            start = marker.start
        tail = text[start:].strip()
        text = text[:start].rstrip()
    room = max(8, limit - len(tail) - (1 if tail else 0))
    if len(text) > room:
        cut = text[: room - 1]
        if " " in cut[room // 2 :]:
            cut = cut[: cut.rfind(" ")]
        text = cut.rstrip(" ,;:，；：") + "…"
    if not tail:
        return text
    glued = textre.search(f"[{scripts.HAN}。！？…]$", text) and not text.isascii()
    return f"{text}{tail}" if glued else f"{text} {tail}"


def _key(sentence: Sentence) -> str:
    return textre.sub(r"\W+", "", sentence.text.lower())


def dedupe(doc: ReportDocument) -> list[tuple[Section, list[Sentence]]]:
    """Each section with its content sentences, a sentence said in an earlier section left out."""
    seen: set[str] = set()
    out: list[tuple[Section, list[Sentence]]] = []
    for section in doc.sections:
        if is_reference_heading(section.title):
            continue
        fresh = []
        for sentence in section.sentences():
            key = _key(sentence)
            if key and key not in seen and not is_aside(sentence.text):
                seen.add(key)
                fresh.append(sentence)
        out.append((section, fresh))
    return out


# ---------------------------------------------------------------- slides


def _chunks(sentences: list[Sentence]) -> list[list[Sentence]]:
    """Fill slides up to SLIDE_WORDS / MAX_BULLETS, then balance so no continuation has < 3 items."""
    chunks: list[list[Sentence]] = []
    words = 0.0
    for sentence in sentences:
        if not chunks or len(chunks[-1]) >= MAX_BULLETS or (words + sentence.words > SLIDE_WORDS and chunks[-1]):
            chunks.append([])
            words = 0.0
        chunks[-1].append(sentence)
        words += sentence.words
    count = len(chunks)
    if count > 1 and len(chunks[-1]) < MIN_CONTINUATION_ITEMS and len(sentences) <= MAX_BULLETS * (count - 1):
        count -= 1
    if count == 1:
        return [sentences]
    if count > 1:  # spread the items evenly: 6 → 3 + 3, 11 → 4 + 4 + 3
        size, extra = divmod(len(sentences), count)
        chunks, start = [], 0
        for index in range(count):
            end = start + size + (1 if index < extra else 0)
            chunks.append(sentences[start:end])
            start = end
    return chunks


def _sources_line(doc: ReportDocument, sentences: list[Sentence], zh: bool) -> str:
    numbers: list[int] = []
    for sentence in sentences:
        numbers.extend(n for n in sentence.citations if n not in numbers)
    if not numbers:
        return ""
    parts = []
    for number in sorted(numbers):
        ref = doc.reference(number)
        if ref is None:
            parts.append(f"[{number}]")
        else:
            parts.append(f"[{number}] {ref.title}" + (f" ({ref.url})" if ref.url else ""))
    return bilingual(zh, "Sources: ", "来源：") + "; ".join(parts)


def _notes(doc: ReportDocument, sentences: list[Sentence], zh: bool) -> str:
    """Speaker notes: the full sentences with their markers, then the sources they cite."""
    body = join_sentences([s.marked() for s in sentences])
    sources = _sources_line(doc, sentences, zh)
    text = body + ("\n\n" + sources if sources else "")
    if len(text) <= MAX_NOTES_CHARS:
        return text
    return shorten(body, MAX_NOTES_CHARS - len(sources) - 2) + "\n\n" + sources


def join_sentences(parts: list[str]) -> str:
    """Join sentences: Chinese sentences need no space between them."""
    out = ""
    for part in parts:
        part = part.strip()
        if out and part and strip_citations(out).rstrip()[-1:] not in "。！？；：，":
            out += " "
        out += part
    return out


@dataclass
class _Pending:
    titles: list[str]
    sentences: list[Sentence]


def slide_outline(doc: ReportDocument) -> SlideOutline:
    """About one content slide per 80–120 words; small neighbouring sections share a slide."""
    zh = is_zh(doc.locale)
    slides: list[Slide] = []
    pending: _Pending | None = None

    def bullet_slide(titles: list[str], sentences: list[Sentence], suffix: str = "") -> Slide:
        # Dense slides get shorter bullets (the full sentences stay in the notes), so the font stays large.
        budget = SLIDE_CHARS_ZH if zh else SLIDE_CHARS
        limit = max(MIN_BULLET_CHARS, min(MAX_BULLET_CHARS, budget // max(1, len(sentences))))
        return Slide(
            title=" · ".join(titles) + suffix,
            bullets=[Sentence(shorten(s.text, limit), s.citations).marked() for s in sentences],
            notes=_notes(doc, sentences, zh),
        )

    def flush() -> None:
        nonlocal pending
        if pending is None:
            return
        previous = merged_from[-1] if merged_from and slides and slides[-1].bullets else None
        if (
            previous is not None
            and len(pending.sentences) < MIN_CONTINUATION_ITEMS
            and len(previous.sentences) + len(pending.sentences) <= MAX_BULLETS
            and sum(s.words for s in previous.sentences + pending.sentences) <= SLIDE_WORDS * 1.1
            and len(previous.titles) + len(pending.titles) <= 3
        ):  # a lone small section joins the slide before it
            previous.titles += pending.titles
            previous.sentences += pending.sentences
            slides[-1] = bullet_slide(previous.titles, previous.sentences)
        else:
            slides.append(bullet_slide(pending.titles, pending.sentences))
            merged_from.append(pending)
        pending = None

    merged_from: list[_Pending] = []  # what the last bullet slide holds, so a small section can join it
    for section, sentences in dedupe(doc):
        name = section.title or bilingual(zh, "Overview", "概述")
        if not sentences and not section.tables and not section.figures:
            continue  # everything it said is on an earlier slide
        chunks = _chunks(sentences) if sentences else []
        small = len(chunks) == 1 and len(chunks[0]) < MIN_CONTINUATION_ITEMS
        if small and not section.tables and not section.figures:
            words = sum(s.words for s in chunks[0])
            if pending is not None and (
                len(pending.sentences) + len(chunks[0]) > MAX_BULLETS
                or sum(s.words for s in pending.sentences) + words > SLIDE_WORDS * 1.1
                or len(pending.titles) >= 3
            ):
                flush()
            if pending is None:
                pending = _Pending([name], list(chunks[0]))
            else:
                pending.titles.append(name)
                pending.sentences.extend(chunks[0])
            continue
        if (
            pending is not None
            and len(chunks) == 1
            and len(pending.sentences) + len(chunks[0]) <= MAX_BULLETS
            and sum(s.words for s in pending.sentences + chunks[0]) <= SLIDE_WORDS * 1.1
        ):  # small sections before this one share its slide
            chunks = [pending.sentences + chunks[0]]
            titles = pending.titles + [name]
            pending = None
            slides.append(bullet_slide(titles, chunks[0]))
            merged_from.append(_Pending(titles, list(chunks[0])))
            chunks = []
        flush()
        for index, chunk in enumerate(chunks):
            slides.append(bullet_slide([name], chunk, "" if index == 0 else bilingual(zh, " (cont.)", "（续）")))
            merged_from.append(
                _Pending([name], list(chunk))
                if index == len(chunks) - 1 and index == 0
                else _Pending([name, "…"], list(chunk))
            )  # a continuation slide takes no merges
        context = sentences[:2]
        if section.tables or section.figures:
            merged_from.append(_Pending(["…"] * 3, []))  # nothing joins a slide across a table or figure
        slides.extend(_visual_slides(doc, section, name, context, zh))
    flush()
    # Section-by-section filling leaves slides half empty when sections are short or just over a slide
    # (a two-sentence answer, a six-bullet list): past the word rule's bound, pack across sections instead.
    high = expected_slide_count(doc)[1]
    if sum(1 for s in slides if s.bullets) > high:
        packed = _packed_slides(doc, zh, bullet_slide)
        if packed is not None and sum(1 for s in packed if s.bullets) < sum(1 for s in slides if s.bullets):
            slides = packed
    return SlideOutline(title=doc.title, subtitle=bilingual(zh, "Research report", "研究报告"), slides=slides)


def _visual_slides(doc: ReportDocument, section: Section, name: str, context: list[Sentence], zh: bool) -> list[Slide]:
    """A section's table and figure slides, each with notes that say where it comes from."""
    out: list[Slide] = []
    for table in section.tables:
        rows = [list(table.header)[:MAX_TABLE_COLS]] + [list(r)[:MAX_TABLE_COLS] for r in table.rows]
        rows = rows[:MAX_TABLE_ROWS]
        intro = bilingual(zh, f"Table from “{name}”.", f"本表来自“{name}”一节。")
        cited = _sources_line(doc, [Sentence("", table.citations)], zh) if table.citations else ""
        notes = join_sentences([intro, _notes(doc, context, zh)] + ([cited] if cited else []))
        out.append(Slide(title=name, table=rows, notes=notes))
    for figure in section.figures:
        caption = figure.caption or bilingual(zh, f"A figure for “{name}”.", f"“{name}”的配图。")
        out.append(Slide(title=figure.caption or name, figure=figure.name,
                         notes=join_sentences([caption, _notes(doc, context, zh)])))  # fmt: skip
    return out


def _packed_slides(
    doc: ReportDocument, zh: bool, bullet_slide: Callable[[list[str], list[Sentence], str], Slide]
) -> list[Slide] | None:
    """The fewest bullet slides that hold the text in order, a slide free to span sections.

    Dynamic programming over the sentences of each run between tables/figures (nothing spans one).
    A slide holds at most MAX_BULLETS sentences, about SLIDE_WORDS words and three section names; a
    slide that only continues one section holds at least MIN_CONTINUATION_ITEMS. Among the fewest
    slides it prefers fewer cuts inside a section, then evenly filled slides. None when impossible.
    """
    cont = bilingual(zh, " (cont.)", "（续）")
    slides: list[Slide] = []
    run: list[tuple[int, str, Sentence]] = []  # (section index, section name, sentence)

    def pack() -> bool:
        n = len(run)
        if not n:
            return True
        inf = (math.inf, math.inf, math.inf)
        best: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] + [inf] * n
        back = [0] * (n + 1)
        for end in range(1, n + 1):
            for start in range(max(0, end - MAX_BULLETS), end):
                if best[start] == inf:
                    continue
                items = run[start:end]
                words = sum(s.words for _, _, s in items)
                names = {i for i, _, _ in items}
                mid = start > 0 and run[start - 1][0] == run[start][0]
                if len(items) > 1 and words > SLIDE_WORDS * 1.1 or len(names) > 3:
                    continue
                if mid and len(names) == 1 and len(items) < MIN_CONTINUATION_ITEMS:
                    continue
                cost = (best[start][0] + 1, best[start][1] + mid, best[start][2] + (SLIDE_WORDS - words) ** 2)
                if cost < best[end]:
                    best[end], back[end] = cost, start
        if best[n] == inf:
            return False
        cuts, end = [], n
        while end:
            cuts.append((back[end], end))
            end = back[end]
        for start, end in reversed(cuts):
            items = run[start:end]
            titles: list[str] = []
            for _, name, _ in items:
                if name not in titles:
                    titles.append(name)
            if start > 0 and run[start - 1][0] == run[start][0]:
                titles[0] += cont
            slides.append(bullet_slide(titles, [s for _, _, s in items], ""))
        run.clear()
        return True

    for index, (section, sentences) in enumerate(dedupe(doc)):
        name = section.title or bilingual(zh, "Overview", "概述")
        run.extend((index, name, s) for s in sentences)
        if section.tables or section.figures:
            if not pack():
                return None
            slides.extend(_visual_slides(doc, section, name, sentences[:2], zh))
    return slides if pack() else None


def slide_outline_from_markdown(md: str, *, locale: str = "en-US") -> SlideOutline:
    return slide_outline(parse_report(md, locale=locale))


def reference_items(md: str | ReportDocument) -> list[str]:
    """The `[n] Title — url` lines of the references section, as plain text."""
    doc = parse_report(md) if isinstance(md, str) else md
    return [f"[{r.number}] {r.title}" + (f" — {r.url}" if r.url else "") for r in doc.references]


def expected_slide_count(doc: ReportDocument) -> tuple[int, int]:
    """The range of bullet slides a deck should have: one per 80–120 words of (deduplicated) text.

    A table or figure ends a run of text (its section's bullets never share a slide with the next
    section's), so each section holding one may add a slide to the upper bound.
    """
    kept = dedupe(doc)
    words = sum(s.words for _, sentences in kept for s in sentences)
    breaks = sum(1 for section, sentences in kept if sentences and (section.tables or section.figures))
    return max(1, math.floor(words / 120)), max(1, math.ceil(words / 80)) + breaks
