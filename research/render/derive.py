"""Derive a slide outline and a two-host podcast script from a report, with no model.

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
from research.agents.types import PodcastLine, PodcastScript, Slide, SlideOutline
from research.render.budgets import spoken_line
from research.report.carry import carried
from research.report.citations import CITATION, find_citation_markers, strip_citations
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
PODCAST_SENTENCES_PER_SECTION = 5


def _t(zh: bool, en: str, zh_text: str) -> str:
    return zh_text if zh else en


def _is_zh(locale: str) -> bool:
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


def _dedupe(doc: ReportDocument) -> list[tuple[Section, list[Sentence]]]:
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
    return _t(zh, "Sources: ", "来源：") + "; ".join(parts)


def _notes(doc: ReportDocument, sentences: list[Sentence], zh: bool) -> str:
    """Speaker notes: the full sentences with their markers, then the sources they cite."""
    body = _join([s.marked() for s in sentences])
    sources = _sources_line(doc, sentences, zh)
    text = body + ("\n\n" + sources if sources else "")
    if len(text) <= MAX_NOTES_CHARS:
        return text
    return shorten(body, MAX_NOTES_CHARS - len(sources) - 2) + "\n\n" + sources


def _join(parts: list[str]) -> str:
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
    zh = _is_zh(doc.locale)
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
    for section, sentences in _dedupe(doc):
        name = section.title or _t(zh, "Overview", "概述")
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
            slides.append(bullet_slide([name], chunk, "" if index == 0 else _t(zh, " (cont.)", "（续）")))
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
    return SlideOutline(title=doc.title, subtitle=_t(zh, "Research report", "研究报告"), slides=slides)


def _visual_slides(doc: ReportDocument, section: Section, name: str, context: list[Sentence], zh: bool) -> list[Slide]:
    """A section's table and figure slides, each with notes that say where it comes from."""
    out: list[Slide] = []
    for table in section.tables:
        rows = [list(table.header)[:MAX_TABLE_COLS]] + [list(r)[:MAX_TABLE_COLS] for r in table.rows]
        rows = rows[:MAX_TABLE_ROWS]
        intro = _t(zh, f"Table from “{name}”.", f"本表来自“{name}”一节。")
        cited = _sources_line(doc, [Sentence("", table.citations)], zh) if table.citations else ""
        notes = _join([intro, _notes(doc, context, zh)] + ([cited] if cited else []))
        out.append(Slide(title=name, table=rows, notes=notes))
    for figure in section.figures:
        caption = figure.caption or _t(zh, f"A figure for “{name}”.", f"“{name}”的配图。")
        out.append(Slide(title=figure.caption or name, figure=figure.name,
                         notes=_join([caption, _notes(doc, context, zh)])))  # fmt: skip
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
    cont = _t(zh, " (cont.)", "（续）")
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

    for index, (section, sentences) in enumerate(_dedupe(doc)):
        name = section.title or _t(zh, "Overview", "概述")
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


# ---------------------------------------------------------------- podcast

# Host lines that move to the next section; each is used at most once per episode.
_TRANSITIONS_EN = (
    "Let's start with {t}.",
    "Let's move on to {t}. What did the sources say?",
    "Now, {t}. Walk us through it.",
    "Next up: {t}.",
    "Let's turn to {t}. What stands out?",
    "What about {t}?",
    "Another angle is {t}.",
    "Let's look at {t} too.",
)
_TRANSITIONS_ZH = (
    "我们先从“{t}”说起。",
    "接下来聊聊“{t}”。资料里是怎么说的？",
    "再来看“{t}”。能给我们讲讲吗？",
    "下一个话题是“{t}”。",
    "说到“{t}”，有什么值得注意的？",
    "那“{t}”方面呢？",
    "换个角度，看看“{t}”。",
    "我们也看一下“{t}”。",
)
_LAST_EN = "Finally, let's talk about {t}."
_OPENING_EN = "Let's start with the big picture."
_OPENING_ZH = "我们先看整体情况。"
_SUMMARY_TITLES = textre.compile(r"^(?:summary|executive summary|key findings|overview|introduction|abstract|"
                             r"摘要|概述|概要|主要发现|核心发现|要点|引言)$", textre.I)  # fmt: skip
_LAST_ZH = "最后，我们来看“{t}”。"
# A first section that answers the question is asked for as such (issue 33).
_ANSWER_TITLES = frozenset(("answer", "the answer", "short answer", "答案", "简短回答", "结论"))


def _is_question(text: str, title: str) -> bool:
    """A sentence that asks (or repeats the report's title): no hook for the intro."""
    plain = tidy_line(text, False).strip("*_ ")
    return plain.endswith(("?", "？")) or plain.rstrip("。.") == title.rstrip("?？。.")
# Lead-ins for a content sentence; each used at most once, after that the sentence stands alone.
_LEADS_EN = ("Right, and ", "On top of that, ", "Also worth noting: ", "And here's a detail: ", "Meanwhile, ",
             "At the same time, ", "One more point: ", "Add to that: ")  # fmt: skip
_LEADS_ZH = ("对，而且", "此外，", "还有一点值得注意：", "另外，", "与此同时，", "再补充一点：", "同样重要的是，")
_AFTER_LEAD_LOWER = textre.compile(r"^(?:A|An|The|In|On|At|By|For|Most|Some|Many|Analysts|Because|This|These|Its)\b")


_ZH_STOP = textre.compile(f"。[.。]+|([{scripts.HAN}])\\.(\\s|$)")  # 。。 / 中文. -> 。


def tidy_line(text: str, zh: bool) -> str:
    """Spoken text: no markers or Markdown, one final punctuation mark ("？。" → "？"), no doubled marks."""
    text = CITATION.sub("", text)  # the report's grammar: never an image or a link
    text = textre.sub(r"[*_`#>]+", "", text)
    text = textre.sub(r"https?://\S+", "", text)
    text = textre.sub(r"\s+", " ", text).strip()
    text = textre.sub(r"\s+([,.;:!?，。；：！？、])", r"\1", text)
    text = textre.sub(r"([？?！!])[。.]+", r"\1", text)
    text = _ZH_STOP.sub(lambda m: m.group(1) + "。" + m.group(2) if m.group(1) else "。", text)
    text = textre.sub(r"\.+", lambda m: "." if len(m.group(0)) == 2 else m.group(0), text)  # ".." only
    text = textre.sub(r"([,，;；:：])[。.]", "。" if zh else ".", text)
    text = text.rstrip(",;:，；：、 ")
    if text and text[-1] not in ".!?。！？…\"”'’)）":
        text += "。" if zh or scripts.is_han(text[-1:]) else "."
    return text


def _lead(pool: list[str], sentence: str, zh: bool, lower_words: set[str]) -> str:
    if not pool:
        return sentence
    lead = pool.pop(0)
    if zh:
        return lead + sentence
    first = sentence.split(" ", 1)[0]
    # Lower-case the first word only when it is an ordinary word ("The", or one the report writes in
    # lower case elsewhere), never a name or an acronym.
    if (_AFTER_LEAD_LOWER.match(sentence) or first.lower() in lower_words) and first[1:2].islower():
        sentence = sentence[0].lower() + sentence[1:]
    return lead + sentence


def _title_phrase(title: str, zh: bool) -> str:
    title = tidy_line(title, zh).rstrip("。.")
    return title if zh else title[:1].lower() + title[1:] if not title[:2].isupper() else title


def podcast_script(doc: ReportDocument, *, max_sentences: int = PODCAST_SENTENCES_PER_SECTION) -> PodcastScript:
    """Intro, one chapter per section (host and guest take turns with the sentences), outro."""
    zh = _is_zh(doc.locale)
    title = tidy_line(doc.title, zh).rstrip("。.") if doc.title else ""
    lines: list[PodcastLine] = []
    intro, outro = _t(zh, "Introduction", "开场"), _t(zh, "Wrap-up", "结语")

    def say(speaker: str, text: str, section: str) -> None:
        text = spoken_line(tidy_line(text, zh))  # render budget: no minutes-long "sentence" (CJK runs too)
        if text and not any(line.text == text for line in lines):
            lines.append(PodcastLine(speaker=speaker, text=text, section=section))  # type: ignore[arg-type]

    sections = [(s, sentences[:max_sentences]) for s, sentences in _dedupe(doc) if sentences]
    if title.endswith(("?", "？")):
        welcome = _t(zh, f"Welcome to Deep Research. Today's question: {title}",
                     f"欢迎收听深度研究。今天的问题是：{title}")  # fmt: skip
    else:
        welcome = _t(zh, f"Welcome to Deep Research. Today we're looking at {title}.",
                     f"欢迎收听深度研究。今天我们来聊聊{title}。")  # fmt: skip
    say("host", welcome, intro)
    hook: list[Sentence] = []
    if sections:
        # The hook: the lead paragraph (up to two sentences) or else the first sentence of the first section;
        # never a question (an "Answer" section opens with the question asked, the short version is its answer).
        take = 2 if not sections[0][0].title else 1
        hook = [x for x in sections[0][1] if not _is_question(x.text, title)][:take]
        sections[0] = (sections[0][0], [x for x in sections[0][1] if all(x is not h for h in hook)])
    if hook:
        say("guest", _t(zh, "Here's the short version: ", "先说结论：") + _join([s.text for s in hook]), intro)
    else:
        say("guest", _t(zh, "Glad to be here. Let's get into it.", "很高兴来到节目，我们直接开始吧。"), intro)
    sections = [(s, sentences) for s, sentences in sections if sentences]

    lower_words = {w for s in doc.sentences() for w in textre.findall(r"\s([a-z][a-z-]+)", s.text)}
    transitions = list(_TRANSITIONS_ZH if zh else _TRANSITIONS_EN)
    leads = list(_LEADS_ZH if zh else _LEADS_EN)
    for number, (section, sentences) in enumerate(sections):
        name = section.title or _t(zh, "Overview", "概述")
        phrase = _title_phrase(name, zh)
        if number == 0 and name.strip().lower() in _ANSWER_TITLES:  # not "Let's start with answer"
            ask = _t(zh, "So, what's the answer?", "那么，答案是什么？")
            transitions.pop(0)
        elif number == 0 and _SUMMARY_TITLES.match(name.strip()):
            ask = _OPENING_ZH if zh else _OPENING_EN
            transitions.pop(0)  # "Let's start with …" would repeat the opening
        elif number == len(sections) - 1 and number > 0:
            ask = (_LAST_ZH if zh else _LAST_EN).format(t=phrase)
        else:
            ask = transitions.pop(0).format(t=phrase) if transitions else f"{name}."
        say("host", ask, name)
        texts = [s.text for s in sentences]
        # The guest answers with the first point (two when they are short), then the hosts take turns.
        first = 2 if len(texts) > 2 and sum(len(t) for t in texts[:2]) < (90 if zh else 200) else 1
        turns = [["guest", _join(texts[:first])]]
        for text in texts[first:]:
            turns.append(["host" if turns[-1][0] == "guest" else "guest", _lead(leads, text, zh, lower_words)])
        if len(turns) > 1 and turns[-1][0] == "host":  # the guest closes each section; the host moves on
            last = turns.pop()
            turns[-1][1] = _join([turns[-1][1], last[1]])
        for speaker, text in turns:
            say(speaker, text, name)
    if hook:  # the takeaway: the short answer again, now that the listener has heard the evidence
        closing = _t(zh, "To sum up: ", "总结一下：") + hook[0].text
    else:
        closing = _t(zh, "That's where the evidence stands today.", "以上就是今天的内容。")
    host_last = lines[-1].speaker == "host"
    say("guest" if host_last else "host", closing, outro)
    say(
        "host" if host_last else "guest",
        _t(zh, "Thanks for listening. The full report, with every source, is on the job page.",
           "感谢收听。完整报告和全部来源都在任务页面上。"),
        outro,
    )  # fmt: skip
    return PodcastScript(locale=doc.locale, title=title or doc.title, lines=lines)


def podcast_script_from_markdown(md: str, *, locale: str = "en-US", max_sentences: int = 5) -> PodcastScript:
    return podcast_script(parse_report(md, locale=locale), max_sentences=max_sentences)


# ---------------------------------------------------------------- checking a script (model or derived)


class ScriptProblem(ValueError):
    """A podcast script that cannot be repaired into something worth speaking."""


_STOCK = textre.compile(r"^(?:interesting|right|ok(?:ay)?|great|i see|wow|很有意思|好的|明白了|原来如此)[.!。！,，]?\s*"
                    r"(?:what else\??|还有呢？?)?$", textre.I)  # fmt: skip


def repair_script(script: PodcastScript, doc: ReportDocument | None = None) -> PodcastScript:
    """Make a script (usually the model's) safe to speak: tidy punctuation, no markers or URLs, no
    disclaimers or reference lists, no repeated or stock filler lines, only lines that carry a sentence
    of `doc` (research.report.carry; the first and last lines and questions frame the talk and are
    exempt), speakers taking turns, every line in a chapter. Raises
    `ScriptProblem` when too little is left."""
    zh = _is_zh(script.locale)
    references = {textre.sub(r"\W+", "", r.title.lower()) for r in doc.references} if doc else set()
    sentences = doc.sentences() if doc else None
    lines: list[PodcastLine] = []
    seen: set[str] = set()
    section = ""
    last = len(script.lines) - 1
    for index, line in enumerate(script.lines):
        text = tidy_line(line.text, zh)
        # The opening and closing lines and the host's questions frame the talk; every other line must
        # carry a sentence of the report.
        framing = index in (0, last) or text.endswith(("?", "？"))
        key = textre.sub(r"\W+", "", text.lower())
        if not key or key in seen or is_aside(text) or _STOCK.match(text) or key in references:
            continue
        if _names_references(text) or (sentences is not None and not framing and carried(text, sentences) is None):
            continue  # a reference list read aloud, or a line that says nothing the report says
        seen.add(key)
        section = (line.section or section or _t(zh, "Introduction", "开场")).strip()
        if lines and lines[-1].speaker == line.speaker and lines[-1].section == section:
            merged = _join([lines[-1].text, text])
            lines[-1] = lines[-1].model_copy(update={"text": merged})
            continue
        lines.append(PodcastLine(speaker=line.speaker, text=text, section=section))
    if len(lines) < 4 or len({line.speaker for line in lines}) < 2:
        raise ScriptProblem(f"only {len(lines)} usable lines from {len(script.lines)} (or a single speaker)")
    return script.model_copy(update={"lines": lines, "title": tidy_line(script.title, zh).rstrip("。.")})


def _names_references(text: str) -> bool:
    """ "References: …" / "参考文献：…": the words before a colon name a references list."""
    chunks = text.replace("：", ":").split(":")[:-1]
    return any(is_reference_heading(" ".join(c.split()[-n:])) for c in chunks for n in (1, 2))


def script_problems(script: PodcastScript) -> list[str]:
    """What a listener would notice: repeated lines, filler, doubled or missing punctuation."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(script.lines, start=1):
        key = textre.sub(r"\W+", "", line.text.lower())
        if key in seen:
            problems.append(f"line {number} repeats line {seen[key]}: {line.text[:60]!r}")
        seen.setdefault(key, number)
        if is_aside(line.text) or _STOCK.match(line.text):
            problems.append(f"line {number} is filler: {line.text[:60]!r}")
        markup = find_citation_markers(line.text)
        if markup or textre.search(r"[？?！!。.][。.](?:[^.]|$)|[，,][。.]|https?://", line.text):
            problems.append(f"line {number} has bad punctuation or markup: {line.text[:60]!r}")
        if line.text[-1:] not in ".!?。！？…\"”'’)）":
            problems.append(f"line {number} does not end a sentence: {line.text[-30:]!r}")
    return problems


def expected_slide_count(doc: ReportDocument) -> tuple[int, int]:
    """The range of bullet slides a deck should have: one per 80–120 words of (deduplicated) text.

    A table or figure ends a run of text (its section's bullets never share a slide with the next
    section's), so each section holding one may add a slide to the upper bound.
    """
    kept = _dedupe(doc)
    words = sum(s.words for _, sentences in kept for s in sentences)
    breaks = sum(1 for section, sentences in kept if sentences and (section.tables or section.figures))
    return max(1, math.floor(words / 120)), max(1, math.ceil(words / 80)) + breaks


def script_from_model(script: PodcastScript | None, report_md: str, *, locale: str) -> PodcastScript:
    """The model's script repaired for speaking, or — when there is none or too little survives — the
    script derived from the report. Either way what reaches TTS has passed `repair_script`."""
    import logging

    doc = parse_report(report_md, locale=locale)
    if script is not None:
        try:
            return repair_script(script.model_copy(update={"locale": locale}), doc)
        except ScriptProblem as exc:
            logging.getLogger(__name__).warning("the model's podcast script is unusable (%s); deriving it", exc)
    return podcast_script(doc)
