"""Report writing for the offline engine: the answer, the key findings and one section per step,
made of the ranked sentences the steps quoted, shared out so no two sections repeat each other
(docs/offline-engine.md, "Report")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from research import scripts, textre
from research.agents.engines.offline.numbers import _numbers
from research.agents.engines.offline.question import (
    FACETS,
    HOW_FACETS,
    UNIT_KINDS,
    Aspect,
    asked_unit,
    question_aspects,
    question_facets,
)
from research.agents.engines.offline.read import (
    _bare_words,
    about_subject,
    command_tools,
    inline_command,
    names_tool,
    no_source_line,
    part_kind,
)
from research.agents.engines.offline.select import _SubjectCheck
from research.agents.rank import held, near_duplicate, tokenize
from research.agents.text import detect_locale, is_chinese
from research.agents.types import AgentContext, Plan, StepResult


class _Section(NamedTuple):
    title: str
    picked: list[dict[str, Any]]  # the ranked sentences this section shows
    report_md: str  # the step's own text, used when it has no ranked sentences
    extractive: bool  # the step ranked sentences (as opposed to a processing step)
    notes: dict[str, Any] = {}  # the step's notes: `unanswered` (its part), `facts` (commands a source states)

    def only(self, keep: Callable[[dict[str, Any]], bool]) -> _Section:
        return self._replace(picked=[s for s in self.picked if keep(s)])


def _said(sentence: dict[str, Any]) -> tuple[int, str]:
    """A quote's identity in the report: its source and its words."""
    return sentence["source"], sentence["text"]


def _notes_sentences(result: StepResult) -> list[dict[str, Any]]:
    return _ranked_in(result.notes)


def _ranked_in(notes: Any) -> list[dict[str, Any]]:
    """The well-formed sentences a step's notes hold (each with its text and source number)."""
    raw = notes.get("sentences") if isinstance(notes, dict) else None
    if not isinstance(raw, list):
        return []
    return [
        s for s in raw if isinstance(s, dict) and isinstance(s.get("text"), str) and isinstance(s.get("source"), int)
    ]


def _shown(result: StepResult, default: int) -> int:
    """How many sentences a step's section shows: its notes' `shown` (a heavy synthesis), else `default`."""
    shown = result.notes.get("shown") if isinstance(result.notes, dict) else None
    return shown if isinstance(shown, int) and not isinstance(shown, bool) and 0 < shown <= 50 else default


def _language_note(sections: list[_Section], zh: bool) -> str:
    """One line when most quoted sentences are in another language than the report."""
    quoted = [s["text"] for section in sections for s in section.picked]
    foreign = sum(is_chinese(detect_locale(text)) != zh for text in quoted)
    if not quoted or foreign * 2 <= len(quoted):
        return ""
    if zh:
        return "_说明：所引来源主要为英文，引文保留原文，未经翻译。_"
    return "_Note: most sources are in Chinese; quotes are kept in their original language, untranslated._"


def _specific(sentence: str) -> float:
    """How specific a sentence is, as a factor: a figure counts, a short sentence says little."""
    factor = 1.3 if _numbers([sentence]) else 1.0
    return factor * (0.7 if len(tokenize(sentence)) < 8 else 1.0)


_PART_ANSWERED = {False: "_The answer above has what the sources say on this._",
                  True: "_上文的答案已包含来源中关于这一点的内容。_"}
# A part no quote of a page shown to be on the subject answers, while its section quotes other pages.
_SEE_SECTION = {False: "_No source shown to be on the subject answers this directly; its section below quotes "
                       "what the other sources say._",
                True: "_没有确定谈论该主题的来源直接回答这一点；下文对应一节列出了其他来源的说法。_"}


def _answer_paragraph(answer: list[tuple[str, dict[str, Any]]], zh: bool) -> str:
    """The answer's blocks: one paragraph a quote (consecutive lines would render as one run-on
    paragraph), each part of the question in bold on its own line before its quotes (when there are
    several), so every cited sentence is still a verbatim quote with its citation at the end of its line; a command
    a source states is quoted as code with its citation; a part no source answers says so."""
    blocks: list[str] = []
    for label, sentence in answer:
        if sentence.get("note"):
            text = sentence["text"]
        elif sentence.get("code"):
            # The line that introduces the command in its source, verbatim, then the command as code.
            lead = f"{sentence['lead']} " if sentence.get("lead") else ""
            text = f"{lead}{_code_span(sentence['text'])} [{sentence['source']}]"
        else:
            text = _cite(sentence["text"], sentence["source"], zh)
        if label:
            blocks.append(f"**{label}**" if zh else f"**{label.rstrip('?')}?**")
        blocks.append(text)
    return "\n\n".join(blocks)


def _code_span(text: str) -> str:
    """`text` as one Markdown code span: a fence longer than any backtick run inside it (CommonMark)."""
    run = longest = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cite(sentence: str, number: int, zh: bool) -> str:
    # Chinese sentences end in "。" and take the marker directly; English ones take a space.
    return f"{sentence}[{number}]" if zh and sentence[-1:] in "。！？" else f"{sentence} [{number}]"



def write_report(
    ctx: AgentContext,
    plan: Plan,
    results: list[StepResult],
    *,
    style: str,
    on_delta: Callable[[str], None],
    sentences_per_step: int,
) -> str:
    """OfflineEngine.report: the whole report, each piece passed to `on_delta` as it is written."""
    zh = is_chinese(ctx.locale or plan.locale)
    by_step = {r.step_id: r for r in results}
    ordered = [by_step[s.id] for s in plan.steps if s.id in by_step]
    in_plan = {id(r) for r in ordered}
    ordered += [r for r in results if id(r) not in in_plan]  # results for steps no longer in the plan
    missing = [s for s in plan.steps if s.id not in by_step]

    part_titles = {a.title for a in question_aspects(ctx.question, ctx.locale or plan.locale)}
    assigned = _assign(ordered, sentences_per_step, first={i for i, r in enumerate(ordered) if r.title in part_titles})
    sections = [
        _Section(r.title, picked, r.report_md, bool(_notes_sentences(r)),
                 r.notes if isinstance(r.notes, dict) else {})
        for r, picked in zip(ordered, assigned, strict=True)
    ]

    pieces: list[str] = []

    def emit(piece: str) -> None:
        pieces.append(piece)
        on_delta(piece)

    note = (
        "_本报告由离线引擎生成：内容是从检索到的来源中按相关度抽取的原句，未使用语言模型。_"
        if zh
        else "_Produced by the offline engine: an extractive report made of ranked sentences quoted from "
        "the sources, without a language model._"
    )
    emit(f"# {plan.title}\n\n{note}\n\n")

    note_lang = _language_note(sections, zh)
    if note_lang:
        emit(f"{note_lang}\n\n")

    aspects = question_aspects(ctx.question, ctx.locale or plan.locale)
    # The subject is what the pages the steps quote share: not every page read (a step that read past
    # its first hits also read pages on other subjects, and they would blur it).
    quoted = {s["source"] for r in ordered for s in _notes_sentences(r)}
    pages = [ref for ref in ctx.sources() if ref.number in quoted] or ctx.sources()
    on_subject = about_subject(ctx.question, ctx.locale or plan.locale, pages)
    tools = command_tools(ctx.question, ctx.locale or plan.locale)

    def answerable(sentence: dict[str, Any]) -> bool:
        # A step stated as code that names the question's tool is on its subject, whatever else it says.
        return on_subject(sentence) or (inline_command(sentence["text"], tools) and names_tool(sentence["text"], tools))

    def answers_who(section: _Section) -> Callable[[dict[str, Any]], bool]:
        # A "who should get it" part also takes what its step let up (select.answer_up): a doubtful page's
        # sentence that says who and names the subject itself.
        unit = asked_unit(section.title) if part_kind(section.title) == "who" else None
        return lambda s: answerable(s) or (unit is not None and bool(s.get("doubtful"))
                                           and unit.search(s["text"]) is not None and on_subject(s, itself=True))

    if part_kind(ctx.question) == "how":
        # A procedure's sections say what their facet says: a step stated as code, or a word of the facet
        # ("option", "error"); the tool's release notes or an appliance's price are no setting of it.
        sections = [s.only(_on_facet(s.title, tools)) for s in sections]
    answer = _answer(ctx.question, aspects, [s.only(answers_who(s)) for s in sections], on_subject, zh=zh,
                     texts={ref.number: ref.text for ref in ctx.sources()}, tools=tools,
                     below=frozenset(s.title for s in sections if s.picked))
    # The parts the answer could only say nothing of: their sections must not point back to it.
    said_none = {label for label, s in answer if label and s.get("note") and s.get("none")}
    if answer:
        emit(f"{'## 答案' if zh else '## Answer'}\n\n{_answer_paragraph(answer, zh)}\n\n")
    # By what a sentence says and where, not by object: the answer may quote a step's ranked sentence that
    # another section shows as its own copy.
    used = {_said(s) for _, s in answer}
    findings = [f for f in _key_findings(ctx.question, sections, style, used) if _said(f[1]) not in used]
    heading = "## 主要发现" if zh else "## Key findings"
    if findings:
        body = "\n".join(f"- {_cite(s['text'], s['source'], zh)}" for _, s in findings)
        emit(f"{heading}\n\n{body}\n\n")
    elif not answer:
        body = (
            "没有从来源中找到可用于回答问题的句子。"
            if zh
            else "No source sentences were found that answer the question."
        )
        emit(f"{heading}\n\n{body}\n\n")

    used |= {_said(s) for _, s in findings}
    part_titles = {a.title for a in aspects}
    for section in sections:
        title, report_md = section.title, section.report_md
        picked = [s for s in section.picked if _said(s) not in used]
        unanswered = _unanswered(section)
        if unanswered:  # said plainly, never filled with what the step found on a neighbouring point
            bullets = no_source_line(unanswered, zh)
        elif picked:
            bullets = "\n".join(f"- {_cite(s['text'], s['source'], zh)}" for s in picked)
        elif title in part_titles:
            # Every part of the question keeps its section, if only to say where its answer is: a step
            # that found something is never reported as having nothing.
            answered = (section.picked or section.extractive) and title not in said_none
            bullets = _PART_ANSWERED[zh] if answered else no_source_line(title, zh)
        elif section.extractive:
            continue  # everything it found is already shown above: no empty section
        else:  # a processing step, or a result without ranked sentences: its own text as is
            bullets = report_md.strip()
            if not bullets:
                continue
        emit(f"## {title}\n\n{bullets}\n\n")
    for step in missing:
        emit(f"## {step.title}\n\n{'本步骤未能完成，没有结果。' if zh else 'This step did not complete.'}\n\n")
    return "".join(pieces)

def _unanswered(section: _Section) -> str:
    value = section.notes.get("unanswered")
    return value if isinstance(value, str) and value.strip() else ""


def _fact(sections: list[_Section]) -> dict[str, Any] | None:
    """The first command the sections' sources state (`facts` in a step's notes), as an answer line."""
    for section in sections:
        for fact in section.notes.get("facts") or []:
            if isinstance(fact, dict) and isinstance(fact.get("text"), str) and isinstance(fact.get("source"), int):
                lead = fact.get("lead") if isinstance(fact.get("lead"), str) else ""
                return {"text": fact["text"], "source": fact["source"], "code": True, "lead": lead}
    return None


def _answer(
    question: str, aspects: list[Aspect], sections: list[_Section], on_subject: _SubjectCheck | None = None,
    *, zh: bool = False, texts: dict[int, str] | None = None, tools: frozenset[str] | None = None,
    below: frozenset[str] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The opening answer: for a question in parts, the best sentences of each part's step, labelled
    with the part (no label for a question of one part: it would only repeat the question); otherwise
    the best sentences of the steps on what the question asks. A part that asks how to do something
    gets the command a source states (or, with no command block, the steps its sources state as code
    inline, in their order); one that asks how much prefers a sentence with a figure; a part no source
    answers says so."""
    chosen: list[tuple[str, dict[str, Any]]] = []
    if tools is None:  # the report passes the ones it found for its own answerable check
        tools = command_tools(question, "zh-CN" if zh else "en-US")

    def named(sentence: dict[str, Any]) -> float:
        return 1.25 if on_subject is not None and on_subject(sentence, itself=True) else 1.0

    def off_part(sentence: dict[str, Any], section: _Section) -> bool:
        # The coverage test's words for the part (`asked` in its step's notes): a sentence in the question's
        # script that holds none of them answers another point (美国房价 under 为什么大多是木结构); one in
        # another script cannot show them, so the ranking speaks for it, as in the coverage test.
        asked = section.notes.get("asked") or []
        return (bool(asked) and scripts.has_han(sentence["text"]) == zh
                and not held(asked, sentence["text"]))

    def take(label: str, section: _Section, count: int, kind: str = "", asks: frozenset[str] = frozenset(),
             unit: textre.Pattern | None = None) -> None:
        # Each quote of a part from another page first: one page rarely says everything.
        fresh = [s for s in section.picked if not any(near_duplicate(s["text"], c["text"]) for _, c in chosen)]
        # An answer states something specific: a figure helps, a short vague sentence does not.
        # A sentence that names the subject itself reads on its own ("其中纯电动…" leans on its page).
        figure = 1.5 if kind == "much" else 1.0
        # For "how much": a sentence that names what the part asks ("成本" for the cost part) answers it
        # before a figure that only shares the subject with it.
        # A sentence from a doubtful page (its page not shown to be on the subject) only fills in.
        # For "how do I …": a sentence that states a step as code ("… with restic init --repo …").
        def step(sentence: str) -> float:
            return 1.5 if kind == "how" and inline_command(sentence, tools) else 1.0

        # A figure in the unit the part asks for answers it in any words ("within about two hours" answers
        # "how soon should treatment start"), before a figure in another unit, as in the step's ranking.
        # "Who should get it": people told they should, in a sentence that names the subject itself (not
        # "the vaccines recommended for adults" of a page on every vaccine).
        def in_unit(sentence: dict[str, Any]) -> bool:
            if unit is None or unit.search(sentence["text"]) is None:
                return False
            return kind != "who" or on_subject is None or on_subject(sentence, itself=True)

        # A doubtful page's sentence that says who, naming the subject itself (the step let only such a one
        # up: select.answer_up), answers "who should get it" before sentences that do not say who.
        fresh.sort(key=lambda s: (bool(s.get("doubtful")) and not (kind == "who" and in_unit(s)),
                                  off_part(s, section) and not in_unit(s),
                                  -float(s.get("score") or 0) * _specific(s["text"])
                   * named(s) * (figure if _numbers([s["text"]]) or in_unit(s) else 1.0)
                   * (1.5 if in_unit(s) else 1.0)
                   * (1.5 if asks & set(tokenize(s["text"])) or in_unit(s) else 1.0)
                   * step(s["text"])))
        # A sentence on another point of the question never fills a part's answer where one on it exists.
        on_part = [s for s in fresh if not off_part(s, section) or in_unit(s)]
        fresh = on_part or fresh
        picks: list[dict[str, Any]] = []
        for sentence in fresh:
            if len(picks) < count and all(p["source"] != sentence["source"] for p in picks):
                picks.append(sentence)
        picks += [s for s in fresh if s not in picks][: count - len(picks)]
        picks.sort(key=fresh.index)  # best first
        fact = _fact([section]) if kind == "how" else None
        if fact and not any(c.get("code") and c["text"] == fact["text"] for _, c in chosen):
            picks.insert(0, fact)  # the command answers "how do I …" first
        unanswered = _unanswered(section)
        if unanswered and not fact:
            # Said plainly, in place of its quotes: what the step found is not the answer to this part.
            # (In italics: a note of the engine's, which the claim check does not take for an uncited claim.)
            picks = [{"text": no_source_line(unanswered, zh), "source": 0, "note": True}]
        elif not picks and label:
            # Never silent on a part: all its step found is quoted above (under another part), or its
            # section quotes pages not shown to be on the subject, or no source was found on it.
            found = _ranked_in(section.notes)
            above = bool(found) and all(any(near_duplicate(s["text"], c["text"]) for _, c in chosen) for s in found)
            below_it = below is None or section.title in below
            text = _PART_ANSWERED[zh] if above else _SEE_SECTION[zh] if below_it else no_source_line(label, zh)
            picks = [{"text": text, "source": 0, "note": True, "none": not (above or below_it)}]
        for sentence in picks:
            chosen.append((label if not any(lb == label for lb, _ in chosen) else "", sentence))

    if aspects:
        per_part = 2 if len(aspects) <= 2 else 1
        by_title = {s.title: s for s in sections}
        words = [frozenset(tokenize(" ".join(a.words))) for a in aspects]
        common = frozenset.intersection(*words) if len(words) > 1 else frozenset()
        for aspect, own in zip(aspects, words, strict=True):
            if aspect.title in by_title:
                kind = part_kind(aspect.title)
                take(aspect.title if len(aspects) > 1 else "", by_title[aspect.title], per_part,
                     kind, own - common if kind == "much" else frozenset(),
                     asked_unit(aspect.title) if kind in UNIT_KINDS else None)
        return chosen
    asked = {f.title_en for f in question_facets(question)} | {f.title_zh for f in question_facets(question)}
    order = sorted(range(len(sections)), key=lambda i: (sections[i].title not in asked, i))
    kind = part_kind(question)
    for index in order:
        if sum(not c.get("code") for _, c in chosen) >= 2:
            break
        take("", sections[index], 2 if sections[index].title in asked else 1, kind,
             unit=asked_unit(question) if kind in UNIT_KINDS else None)
        if any(c.get("code") for _, c in chosen):
            kind = ""  # one command is the answer's key fact
    if kind == "how":  # no section led to it: the first command any step's sources state
        fact = _fact(sections)
        if fact:
            chosen.insert(0, ("", fact))
        else:
            steps = _stated_steps(sections, tools, texts or {})
            if len(steps) >= 2:
                return [("", step) for step in steps]
    return chosen[:3]


_MOST_STEPS = 5


def _stated_steps(sections: list[_Section], tools: frozenset[str], texts: dict[int, str]) -> list[dict[str, Any]]:
    """A "how do I …" answer when no source has a command block: the sentences that state a step as code
    inline ("… with restic init --repo …"), from pages on the subject or, on a doubtful page, naming the
    question's tool ("install it with sudo apt install restic"), each once: an install first, then in the
    order their sources state them (create, back up, list)."""
    found: list[dict[str, Any]] = []
    for section in sections:
        # Every sentence the step ranked, not only those its section shows: sections share sentences out,
        # and a step's second command ("… restic -r /srv/restic-repo backup ~ …") may be shown nowhere.
        for sentence in [*section.picked, *_ranked_in(section.notes)]:
            if not inline_command(sentence["text"], tools):
                continue
            if sentence.get("doubtful") and not names_tool(sentence["text"], tools):
                continue
            if not any(near_duplicate(sentence["text"], f["text"]) for f in found):
                found.append(sentence)
    # The page quoted first leads, pages on the subject before doubtful ones.
    sources = list(dict.fromkeys(f["source"] for f in sorted(found, key=lambda f: bool(f.get("doubtful")))))

    def place(sentence: dict[str, Any]) -> tuple[bool, int, int]:
        at = texts.get(sentence["source"], "").find(sentence["text"])
        return (not installs(sentence["text"]), sources.index(sentence["source"]),
                at if at >= 0 else len(texts.get(sentence["source"], "")))

    return sorted(found, key=place)[:_MOST_STEPS]


_INSTALLERS = frozenset("apt apt-get brew dnf yum pacman pip pip3 pipx npm cargo gem snap choco winget".split())


def installs(sentence: str) -> bool:
    """The sentence installs something with a package manager ("sudo apt install restic"): a first step."""
    words = [w.strip("`").lower() for w in _bare_words(sentence)]
    return any(a in _INSTALLERS and b in ("install", "add") for a, b in zip(words, words[1:], strict=False))


def _on_facet(title: str, tools: frozenset[str]) -> Callable[[dict[str, Any]], bool]:
    """For a how-to facet's section (Steps, Options and configuration, Common problems): whether a sentence
    states a step as code or holds a word of the facet's. Any other section keeps every sentence."""
    facet = next((f for f in FACETS if f.key in HOW_FACETS and title in (f.title_en, f.title_zh)), None)
    if facet is None:
        return lambda sentence: True
    words = set(tokenize(facet.hints))
    zh_words = [w for w in facet.hints.split() if scripts.has_han(w)]
    return lambda sentence: bool(
        inline_command(sentence["text"], tools) or words & set(tokenize(sentence["text"]))
        or any(w in sentence["text"] for w in zh_words))


def _key_findings(
    question: str, sections: list[_Section], style: str, used: set[tuple[int, str]] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """One finding per facet: each section's best sentence, sections on what the question asks first.

    Shorter styles get fewer findings. A section whose best sentence repeats an earlier finding
    offers its next one.
    """
    size = {"social_media": 3, "news": 4}.get(style, 6)
    asked = {f.title_en for f in question_facets(question)} | {f.title_zh for f in question_facets(question)}
    order = sorted(range(len(sections)), key=lambda i: (sections[i].title not in asked, i))
    chosen: list[tuple[str, dict[str, Any]]] = []
    for index in order:
        section = sections[index]
        # The facet the question asks about ("what limits …": challenges) answers it: up to three findings.
        want = 3 if section.title in asked else 1
        for sentence in section.picked:
            # A finding is what pages shown to be on the subject say; a doubtful page's sentence is not one.
            if (used and _said(sentence) in used) or sentence.get("doubtful"):
                continue
            if want and not any(near_duplicate(sentence["text"], c["text"]) for _, c in chosen):
                chosen.append((section.title, sentence))
                want -= 1
        if len(chosen) >= size:
            break
    return chosen[:size]

def _assign(
    results: list[StepResult], sentences_per_step: int, first: set[int] | None = None
) -> list[list[dict[str, Any]]]:
    """Share the sentences out between sections so that no two sections repeat each other.

    The steps on the question's own parts (`first`) pick first, all their sentences; then the
    other sections take turns by rank (every section's best sentence first, then every second
    best …), so a sentence that one step ranks first and another step only used as filler goes
    to the first. A part no source answers picks last: its section shows only that, so a sentence it
    took would be lost to the parts that show it (it keeps what no other step ranked, for the findings).
    """
    ranked = [_notes_sentences(r) for r in results]
    # A heavy step's synthesis may show more than a standard step (its notes' `shown`).
    sizes = [_shown(r, sentences_per_step) for r in results]
    assigned: list[list[dict[str, Any]]] = [[] for _ in results]
    used: list[str] = []
    last = {i for i, r in enumerate(results) if isinstance(r.notes, dict) and r.notes.get("unanswered")}
    first = (first or set()) - last
    rounds = range(max((len(r) for r in ranked), default=0))
    turns = [(rank, i) for i in sorted(first) for rank in rounds]
    turns += [(rank, i) for rank in rounds for i in range(len(ranked)) if i not in first | last]
    turns += [(rank, i) for i in sorted(last) for rank in rounds]
    for rank, index in turns:
        sentences = ranked[index]
        if rank >= len(sentences) or len(assigned[index]) >= sizes[index]:
            continue
        sentence = sentences[rank]
        if not any(near_duplicate(sentence["text"], u) for u in used):
            assigned[index].append(sentence)
            used.append(sentence["text"])
    return assigned
