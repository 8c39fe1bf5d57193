"""Derive a two-host podcast script from a report, with no model, and check a model's script before TTS.

Like the slide outline (derive.py) it reads the one parse of the report and speaks only its content
sentences: it reorganizes the report's sentences, it never invents content.
"""

from __future__ import annotations

from research import scripts, textre
from research.agents.types import PodcastLine, PodcastScript
from research.render.budgets import spoken_line
from research.render.derive import bilingual, dedupe, is_zh, join_sentences
from research.report.carry import carried
from research.report.citations import CITATION, find_citation_markers
from research.report.document import ReportDocument, Sentence, is_aside, parse_report
from research.report.markdown import identifier_join
from research.report.references import is_references_heading as is_reference_heading

PODCAST_SENTENCES_PER_SECTION = 5


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
    # An identifier's underscore is spoken as a pause (RESTIC_PASSWORD_FILE → "RESTIC PASSWORD FILE"), not
    # dropped into one long word; emphasis and code marks go.
    text = "".join(" " if identifier_join(text, i) else ch for i, ch in enumerate(text))
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
    zh = is_zh(doc.locale)
    title = tidy_line(doc.title, zh).rstrip("。.") if doc.title else ""
    lines: list[PodcastLine] = []
    intro, outro = bilingual(zh, "Introduction", "开场"), bilingual(zh, "Wrap-up", "结语")

    def say(speaker: str, text: str, section: str) -> None:
        text = spoken_line(tidy_line(text, zh))  # render budget: no minutes-long "sentence" (CJK runs too)
        if text and not any(line.text == text for line in lines):
            lines.append(PodcastLine(speaker=speaker, text=text, section=section))  # type: ignore[arg-type]

    sections = [(s, sentences[:max_sentences]) for s, sentences in dedupe(doc) if sentences]
    if title.endswith(("?", "？")):
        welcome = bilingual(zh, f"Welcome to Deep Research. Today's question: {title}",
                     f"欢迎收听深度研究。今天的问题是：{title}")  # fmt: skip
    else:
        welcome = bilingual(zh, f"Welcome to Deep Research. Today we're looking at {title}.",
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
        short = join_sentences([s.text for s in hook])
        say("guest", bilingual(zh, "Here's the short version: ", "先说结论：") + short, intro)
    else:
        say("guest", bilingual(zh, "Glad to be here. Let's get into it.", "很高兴来到节目，我们直接开始吧。"), intro)
    sections = [(s, sentences) for s, sentences in sections if sentences]

    lower_words = {w for s in doc.sentences() for w in textre.findall(r"\s([a-z][a-z-]+)", s.text)}
    transitions = list(_TRANSITIONS_ZH if zh else _TRANSITIONS_EN)
    leads = list(_LEADS_ZH if zh else _LEADS_EN)
    for number, (section, sentences) in enumerate(sections):
        name = section.title or bilingual(zh, "Overview", "概述")
        phrase = _title_phrase(name, zh)
        if number == 0 and name.strip().lower() in _ANSWER_TITLES:  # not "Let's start with answer"
            ask = bilingual(zh, "So, what's the answer?", "那么，答案是什么？")
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
        turns = [["guest", join_sentences(texts[:first])]]
        for text in texts[first:]:
            turns.append(["host" if turns[-1][0] == "guest" else "guest", _lead(leads, text, zh, lower_words)])
        if len(turns) > 1 and turns[-1][0] == "host":  # the guest closes each section; the host moves on
            last = turns.pop()
            turns[-1][1] = join_sentences([turns[-1][1], last[1]])
        for speaker, text in turns:
            say(speaker, text, name)
    if hook:  # the takeaway: the short answer again, now that the listener has heard the evidence
        closing = bilingual(zh, "To sum up: ", "总结一下：") + hook[0].text
    else:
        closing = bilingual(zh, "That's where the evidence stands today.", "以上就是今天的内容。")
    host_last = lines[-1].speaker == "host"
    say("guest" if host_last else "host", closing, outro)
    say(
        "host" if host_last else "guest",
        bilingual(zh, "Thanks for listening. The full report, with every source, is on the job page.",
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
    zh = is_zh(script.locale)
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
        section = (line.section or section or bilingual(zh, "Introduction", "开场")).strip()
        if lines and lines[-1].speaker == line.speaker and lines[-1].section == section:
            merged = join_sentences([lines[-1].text, text])
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
