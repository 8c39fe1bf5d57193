"""The offline engine: whole research jobs with no model server (docs/architecture.md, "Parts").

It shares the graph, events, plan review, tools and renderers with the model engine; only the
text-producing functions differ. Everything is extractive and deterministic:

- coordinate: greetings get a short answer, anything else is researched;
- plan: one step per facet of the question (background, current state, key figures, ...);
- research: search + fetch, rank the fetched sentences against the step's query with BM25, keep
  the best non-duplicate ones, each copied verbatim from its source and cited as [n];
- process: descriptive statistics of the numbers found by earlier steps, run in the sandbox;
- report: a summary of the strongest sentences plus one section per step (no references list:
  the orchestrator appends it from the source registry);
- podcast script / slide outline: derived from the report by research.render.derive.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from research import textre
from research.agents.engines.offline_titles import readable_steps
from research.agents.rank import RankedSentence, near_duplicate, rank_sentences, split_sentences, tokenize
from research.agents.text import STOPWORDS_EN, ZH_STOP_PHRASES, detect_locale, is_chinese, key_terms
from research.agents.types import (
    AgentContext,
    CoordinatorDecision,
    Plan,
    PlanStep,
    PodcastScript,
    RunVariant,
    SlideOutline,
    SourceRef,
    StepResult,
    ToolError,
)

# ---------------------------------------------------------------- coordinator

_GREETING_WORDS_EN = frozenset(
    "hi hello hey heya hiya yo howdy greetings hallo there thanks thank you thx ty cheers good morning "
    "afternoon evening day how are doing ok okay bye goodbye see ya nice to meet much so a lot".split()
)
_GREETING_EN_CORE = frozenset(
    "hi hello hey heya hiya yo howdy greetings hallo thanks thank thx ty cheers bye goodbye morning afternoon "
    "evening".split()
)
_GREETING_PHRASES_ZH: tuple[str, ...] = tuple(
    (
        "你好吗 你好 您好 大家好 哈喽 哈啰 嗨 谢谢你 谢谢您 谢谢 多谢 感谢 "
        "早上好 下午好 晚上好 早安 晚安 在吗 再见 拜拜 呀 啊 哦 呢 嘛"
    ).split()
)
_GREETING_MAX_WORDS = 6


def is_small_talk(text: str) -> bool:
    """A message made only of greeting / thanks words ("hi", "thanks a lot!", "你好", "谢谢")."""
    cleaned = unicodedata.normalize("NFKC", text).strip().lower()
    if not cleaned:
        return False
    zh = textre.sub(r"[^\p{L}\p{N}]+", "", cleaned)  # Python's [\s\W_]: neither letter nor digit
    if textre.search(r"[\u4e00-\u9fff]", zh):
        rest = zh
        for phrase in _GREETING_PHRASES_ZH:
            rest = rest.replace(phrase, "")
        return rest == "" and zh != rest
    words = textre.findall(r"[a-z]+", cleaned)
    return (
        0 < len(words) <= _GREETING_MAX_WORDS
        and all(w in _GREETING_WORDS_EN for w in words)
        and any(w in _GREETING_EN_CORE for w in words)
    )


# ---------------------------------------------------------------- planner


@dataclass(frozen=True)
class Facet:
    key: str
    title_en: str
    title_zh: str
    query_en: str  # words added to the question's key terms to make the step's search query
    query_zh: str
    aliases: tuple[str, ...]  # words in re-plan feedback that name this facet
    # Words typical of sentences about this facet (not of searches for it): they steer the ranking
    # towards e.g. sentences with "percent" or "million" for key figures. English and Chinese.
    hints: str = ""


FACETS: tuple[Facet, ...] = (
    Facet("overview", "Overview", "概述", "overview", "概述 简介", ("overview", "概述", "概况")),
    Facet(
        "background",
        "Background",
        "背景",
        "background history origins",
        "背景 历史 起源",
        ("background", "history", "origin", "origins", "背景", "历史", "起源"),
        "history historical began first originally invented introduced decades founded earlier "
        "历史 起源 最早 发明 提出 早在 年代 此前",
    ),
    Facet(
        "current",
        "Current state",
        "现状",
        "current state latest developments",
        "现状 最新进展",
        ("current", "status", "state", "latest", "present", "现状", "最新", "进展"),
        "currently today now recent recently announced launched ongoing already "
        "目前 当前 现在 近期 最近 已经 正在 宣布 推出",
    ),
    Facet(
        "figures",
        "Key figures and data",
        "关键数据",
        "key figures statistics data",
        "关键数据 统计 数字",
        ("figures", "data", "statistics", "numbers", "stats", "数据", "统计", "数字"),
        "percent million billion share number estimate rate growth total average "
        "亿元 万辆 百分 规模 占比 增长 数量 达到",
    ),
    Facet(
        "actors",
        "Key players",
        "主要参与者",
        "key players companies organizations",
        "主要参与者 企业 机构",
        ("players", "actors", "companies", "organizations", "参与者", "企业", "公司", "机构"),
        "company firm startup government university leading partner 公司 企业 政府 大学 机构 厂商 领先 合作",
    ),
    Facet(
        "comparison",
        "Comparisons and alternatives",
        "比较与替代方案",
        "comparison alternatives",
        "比较 替代方案",
        ("comparison", "comparisons", "alternatives", "compare", "比较", "对比", "替代"),
        "compared unlike whereas alternative instead cheaper better worse 相比 替代 不同 优于 低于 高于",
    ),
    Facet(
        "challenges",
        "Challenges and obstacles",
        "挑战与障碍",
        "challenges obstacles risks",
        "挑战 障碍 风险",
        ("challenges", "challenge", "obstacles", "risks", "problems", "barriers", "挑战", "障碍", "风险", "问题"),
        "challenge problem obstacle barrier risk difficult hard hurdle limit cost expensive require must "
        "cannot lack low concern "
        "挑战 问题 障碍 风险 困难 难题 限制 成本 瓶颈",
    ),
    Facet(
        "outlook",
        "Outlook",
        "前景",
        "outlook future trends forecast",
        "前景 未来 趋势 预测",
        ("outlook", "future", "trends", "forecast", "prospects", "前景", "未来", "趋势", "预测"),
        "future expect expected forecast outlook likely prospects 未来 预计 预测 有望 前景 趋势",
    ),
)
_FACET_BY_KEY = {f.key: f for f in FACETS}
CORE_FACETS = ("background", "current", "figures", "challenges", "outlook")
EXTRA_FACETS = ("actors", "comparison")  # used only when more than five steps are allowed or asked for
# Which facets survive when fewer steps are allowed: the most informative first.
_FACET_PRIORITY = ("current", "figures", "challenges", "outlook", "background", "actors", "comparison")
_CANONICAL_ORDER = ("overview", "background", "current", "figures", "actors", "comparison", "challenges", "outlook")

_NEGATIONS = textre.compile(
    r"\b(?:no|not|without|remove|drop|skip|exclude|omit|delete|less)\b|去掉|删除|删去|去除|不要|不需要|省略"
)
_ONLY = textre.compile(r"\b(?:only|just)\b|只要|只需|仅|只")
# "fewer steps" / "more steps" style hints; "more on X" is a focus request, not a longer plan.
_FEWER = textre.compile(
    r"\bfewer\b|\bless\s+(?:steps?|sections?)\b|\bshorter\b|\b(?:reduce|cut)\s+the\s+(?:steps?|plan)\b|"
    r"更少|少一些|少一点|减少步骤|精简"
)
_MORE = textre.compile(
    r"\bmore\s+(?:steps?|sections?|facets?|aspects?)\b|\blonger\b|\bexpand\b|更多步骤|多一些|多一点|增加步骤"
)
_STEP_COUNT = textre.compile(
    r"(\d{1,2}|[一二两三四五六七八九十])\s*(?:steps?|sections?|个步骤|步|个部分|部分)", textre.I
)
_ZH_NUMBERS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
# Words of re-plan feedback that steer the plan's shape rather than name a topic.
_FEEDBACK_FILLER_EN = frozenset(
    "step steps section sections plan fewer more less shorter longer add remove drop skip exclude omit delete "
    "focus include cover covering only just please also additional expand extra reduce smaller instead "
    "keep make sure mention emphasis emphasise emphasize".split()
)
_FEEDBACK_FILLER_ZH = tuple(
    "步骤 部分 计划 更少 更多 增加 减少 去掉 删除 不要 重点 关注 包括 加上 添加 一些 一点 只要 只需 精简 扩展".split()
)


def _facet_title(facet: Facet, zh: bool) -> str:
    return facet.title_zh if zh else facet.title_en


def _facet_mentions(feedback: str) -> tuple[list[str], list[str]]:
    """Facets the feedback asks for and facets it asks to drop ("no outlook", "去掉背景")."""
    text = feedback.lower()
    wanted: list[str] = []
    dropped: list[str] = []
    for facet in FACETS:
        for alias in facet.aliases:
            quoted = textre.escape(alias)
            pattern = quoted if textre.search(r"[\u4e00-\u9fff]", alias) else rf"\b{quoted}\b"
            match = textre.search(pattern, text)
            if not match:
                continue
            before = text[max(0, match.start() - 20) : match.start()]
            clause = textre.split(r"[,.;，。；]|\band\b|\bbut\b|但", before)[-1]
            target = dropped if _NEGATIONS.search(clause) else wanted
            if facet.key not in target:
                target.append(facet.key)
            break
    return wanted, [k for k in dropped if k not in wanted]


def _feedback_terms(feedback: str, zh: bool) -> list[str]:
    """Topic words of the feedback: what is left after facet names and plan-shaping words."""
    aliases = {a for f in FACETS for a in f.aliases}
    text = feedback
    for phrase in sorted(aliases | set(_FEEDBACK_FILLER_ZH), key=len, reverse=True):
        if textre.search(r"[\u4e00-\u9fff]", phrase):
            text = text.replace(phrase, " ")
    text = _STEP_COUNT.sub(" ", text)
    terms = key_terms(text, "zh-CN" if zh else "en-US", fallback=False)
    out: list[str] = []
    for term in terms:
        low = term.lower()
        if low in aliases or low in _FEEDBACK_FILLER_EN or low in STOPWORDS_EN or low.isdigit():
            continue
        if term in ZH_STOP_PHRASES:
            continue
        out.append(term)
    return out


def _requested_count(feedback: str, current: int) -> int | None:
    match = _STEP_COUNT.search(feedback)
    if match:
        raw = match.group(1)
        return int(raw) if raw.isdigit() else _ZH_NUMBERS[raw]
    if _FEWER.search(feedback.lower()):
        return current - 1
    if _MORE.search(feedback.lower()):
        return current + 1
    return None


def _plan_title(question: str) -> str:
    title = " ".join(question.split())
    if len(title) > 120:
        cut = title[:120]
        title = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
    return (title[:1].upper() + title[1:]) or "Research"


# ---------------------------------------------------------------- process step

# 1,200 / 3.5 / 42 as whole numbers: not digits glued to words ("GPT4", "H100") or other digits.
# A number is the start of a run of word characters, dots and commas, up to a dot or comma that no digit
# follows, or the whole run (what `(?<![\w.,])…(?!\w|[.,]\d)` meant; RE2 has no lookaround).
_NUMBER_RUN = textre.compile(r"[\w.,]+")
_NUMBER_STOP = textre.compile(r"[.,](?:\D|$)")
_NUMBER = textre.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def _number_strings(sentence: str) -> list[str]:
    found = []
    for run in _NUMBER_RUN.findall(sentence):
        stop = _NUMBER_STOP.search(run)
        head = run[: stop.start()] if stop else run
        if _NUMBER.fullmatch(head):
            found.append(head)
    return found


_CITATION = textre.compile(r"\[\d{1,4}(?:\s*,\s*\d{1,4})*\]")


def _numbers(sentences: Sequence[str], limit: int = 200) -> list[float]:
    """Numbers quoted in sentences, years (1800–2100 without decimals) left out as they aren't data."""
    values: list[float] = []
    for sentence in sentences:
        for raw in _number_strings(sentence):
            value = float(raw.replace(",", ""))
            if "." not in raw and "," not in raw and 1800 <= value <= 2100:
                continue
            values.append(value)
            if len(values) >= limit:
                return values
    return values


_STATS_CODE = """\
import statistics
values = {values}
print("count", len(values))
print("min", min(values))
print("max", max(values))
print("mean", round(statistics.mean(values), 4))
print("median", statistics.median(values))
if len(values) > 1:
    print("stdev", round(statistics.stdev(values), 4))
"""


def _step_facets(step: PlanStep) -> list[Facet]:
    """Facets a step is about, judged by its title only (descriptions carry the topic's words,
    and "solid-state" must not make every step a "current state" step)."""
    title = step.title.lower()
    found: list[Facet] = []
    for facet in FACETS:
        names = (facet.title_en.lower(), facet.title_zh, *facet.aliases)
        if any(
            (n in title) if textre.search(r"[\u4e00-\u9fff]", n) else textre.search(rf"\b{textre.escape(n)}\b", title)
            for n in names
        ):
            found.append(facet)
    return found


def _figures_prior(sentence: str) -> float:
    """A "key figures" step wants sentences that quote numbers, and years alone are not figures."""
    return 2.0 if _numbers([sentence]) else 1.0


def _figures_bonus(sentence: str) -> float:
    """Every step prefers a sentence with a figure a little: it usually states something specific."""
    return 1.3 if _numbers([sentence]) else 1.0


def question_facets(question: str) -> list[Facet]:
    """Facets the question itself asks about ("what limits …" → challenges, "现状如何" → current state)."""
    # "solid-state" is not a question about the current state: compounds are the topic's words.
    words = set(tokenize(textre.sub(r"\S+-\S+", " ", question)))
    found: list[Facet] = []
    for facet in FACETS:
        names = (*facet.aliases, *facet.hints.split())
        if any(set(tokenize(n)) and set(tokenize(n)) <= words for n in names):
            found.append(facet)
    return found


@dataclass(frozen=True)
class Aspect:
    """One part of a question that asks several things ("… production and safety?")."""

    title: str  # the part in the question's own words, as a sub-question (English) or a phrase (Chinese)
    query: str  # its key terms plus the subject's, for the step's search
    words: tuple[str, ...]  # the words that tell this part from the others


_WH = ("what", "how", "why", "which", "who", "when", "where", "is", "are", "does", "do", "can", "will")
_WH_START = frozenset(("what", "how", "why", "which", "who", "when", "where"))
_EN_PIECE = textre.compile(r"\s*[,;]\s*")
_EN_AND = textre.compile(r"\s+(?:and|or)\s+")
_ZH_AND = textre.compile(r"以及|和|及|、|，|,")
_ZH_HOW = ("如何", "怎样", "怎么", "为何", "为什么")
_ZH_ASK = ("如何", "怎样", "怎么样", "是多少", "有多大", "多大", "多少", "有哪些", "哪些", "是什么", "情况", "吗", "呢")


def _strip_zh_ask(text: str) -> str:
    for phrase in _ZH_ASK:
        if text.endswith(phrase) and len(text) > len(phrase):
            text = text[: -len(phrase)]
    return text.strip()


def _en_clauses(text: str) -> list[str]:
    """Clauses of an English question: at commas and semicolons, and at "and" before a wh-word."""
    out: list[str] = []
    for piece in _EN_PIECE.split(text):
        words = piece.split()
        if words and words[0].lower() in ("and", "but"):
            words = words[1:]
        start = 0
        for i, word in enumerate(words):
            if word.lower() == "and" and i > start and i + 1 < len(words) and words[i + 1].lower() in _WH_START:
                out.append(" ".join(words[start:i]))
                start = i + 1
        out.append(" ".join(words[start:]))
    return [c for c in out if c]


def question_aspects(question: str, locale: str) -> list[Aspect]:
    """The parts of a question that asks several things, in its own words; [] for a one-part question.

    English: clauses ("What does X cost, and what would make it cheaper?") and a pair joined by
    "and" at the end of a clause ("What limits X's production and safety?" → "What limits X's
    production", "What limits X's safety"). Chinese: the parts joined by 和/及/、 after the subject
    ("数据中心的耗电量有多大，如何降低？" → 数据中心的耗电量, 数据中心如何降低).
    """
    text = " ".join(question.split()).strip().rstrip("?？!！.。")
    if not text:
        return []
    parts: list[tuple[str, str]] = []  # (sub-question, the words that tell it apart)
    if is_chinese(locale) or detect_locale(text) == "zh-CN":
        pieces = [p.strip() for p in _ZH_AND.split(text) if p.strip()]
        if len(pieces) < 2:
            return []
        head = pieces[0]
        cut = head.rfind("的")
        subject, first = (head[:cut], head[cut + 1 :]) if cut > 0 else ("", head)
        items = [_strip_zh_ask(first)] + [_strip_zh_ask(p) for p in pieces[1:]]
        zh_parts = [(f"{subject}{'' if item.startswith(_ZH_HOW) else '的'}{item}" if subject else item, item)
                    for item in items if item]
        if len(zh_parts) < 2:
            return []
        return [Aspect(title[:200], f"{subject} {item}".strip(), (item,)) for title, item in zh_parts[:4]]
    else:
        clauses = _en_clauses(text)
        for clause in clauses:
            pair = list(_EN_AND.finditer(clause))
            tail = clause[pair[-1].end() :] if pair else ""
            before = clause[: pair[-1].start()] if pair else clause
            # "… production and safety": the last word before "and" and a short tail are alternatives.
            if pair and 0 < len(tail.split()) <= 3 and before.split():
                stem_words = before.split()
                left = stem_words[-1]
                stem = " ".join(stem_words[:-1])
                parts.append((f"{stem} {left}".strip(), left))
                parts.append((f"{stem} {tail}".strip(), tail))
            elif len(clauses) > 1:
                parts.append((clause, ""))  # a clause of its own: nothing to take out of the others
    if len(parts) < 2:
        return []
    subject_terms = key_terms(question, locale)
    out: list[Aspect] = []
    for sub, own in parts:
        title = sub[:1].upper() + sub[1:]
        terms = key_terms(sub, locale, fallback=False)
        others = {t.lower() for _, words in parts if words and words != own
                  for t in key_terms(words, locale, fallback=False)}
        query = [t for t in dict.fromkeys([*terms, *subject_terms]) if t.lower() not in others or t in terms]
        words = tuple(key_terms(own or sub, locale, fallback=False)) or (sub,)
        out.append(Aspect(title[:200], " ".join(query)[:400], words))
    return out[:4]


def _shared_subject(question: str, locale: str, sources: Sequence[SourceRef]) -> set[str]:
    """Tokens of the question's key terms that most fetched pages contain: the subject, which tells
    no sentence apart from another, unlike what the question asks about it ("limits", "cost")."""
    if len(sources) < 2:
        return set()
    pages = [set(tokenize(f"{ref.title} {ref.text}")) for ref in sources]
    shared: set[str] = set()
    for term in key_terms(question, locale):
        for token in tokenize(term):
            if sum(token in page for page in pages) >= 0.5 * len(pages):
                shared.add(token)
    return shared


_CJK_RUN = textre.compile(r"[\u4e00-\u9fff]+")


def _same_script(locale: str, ref: SourceRef) -> bool:
    """The page is written in the question's script (Chinese or not)."""
    return is_chinese(detect_locale(ref.text[:3000])) == is_chinese(locale)


def _source_weights(question: str, locale: str, sources: Sequence[SourceRef]) -> dict[int, float]:
    """How much each fetched page is about the question's subject, as a factor on its sentences' scores.

    A page in the question's script is weighed by the share of the question's key terms it contains
    (a term counts when a third of its tokens occur): every page a search returns shares some words
    with the question, but a page on another subject lacks most of them. A page in another script
    cannot be compared word for word, so the search engine's order speaks for it.
    """
    raw_terms = [t for t in key_terms(question, locale) if tokenize(t)]
    terms = [set(tokenize(t)) for t in raw_terms]
    # A long Chinese chunk ("抽水蓄能在中国面临") is its words run together, the subject first: a page
    # that has its first four characters verbatim ("抽水蓄能") has the term. (Only the first: a window
    # across two words, "电池量产", would match pages on other batteries.)
    heads = [[t[:4]] if len(t) >= 5 and _CJK_RUN.fullmatch(t) else [] for t in raw_terms]
    total = sum(len(t) for t in terms)
    weights: dict[int, float] = {}
    foreign: list[int] = []
    for ref in sources:
        if not _same_script(locale, ref) or not terms:
            foreign.append(ref.number)
            continue
        present = set(tokenize(f"{ref.title} {ref.text}"))
        # Long terms weigh more: "固态电池量产" says more about the subject than "限制".
        # A word or two must be there in full ("solid-state" is not "United States"), a long CJK term by half.
        page = f"{ref.title} {ref.text}"
        share = sum(
            len(t)
            for t, head in zip(terms, heads, strict=True)
            if (t <= present if len(t) <= 2 else 2 * len(t & present) >= len(t)) or any(h in page for h in head)
        ) / total
        weights[ref.number] = 0.05 if share < 0.34 else 0.7 + 0.3 * share
    on_topic = any(w >= 0.85 for w in weights.values())
    for rank, number in enumerate(foreign):
        weights[number] = 0.1 if on_topic else max(0.3, 1.0 - 0.15 * rank)
    return weights


def _foreign_titles(locale: str, sources: Sequence[SourceRef], weights: dict[int, float]) -> list[str]:
    """The titles of the best two pages in another script, when no page in the question's script is on
    its subject: the question's words cannot match their sentences, the titles of what the search
    engine ranked first for it can (pseudo-relevance feedback; "固态电池" finds "solid-state battery")."""
    own = [ref for ref in sources if _same_script(locale, ref)]
    if any(weights.get(ref.number, 0.0) >= 0.85 for ref in own):
        return []
    foreign = [ref for ref in sources if ref not in own and ref.title.strip()]
    foreign.sort(key=lambda ref: -weights.get(ref.number, 0.0))  # stable: search order among equals
    return [ref.title.strip()[:200] for ref in foreign[:2]]


# ---------------------------------------------------------------- the engine


def _aspect_of(question: str, locale: str, step: PlanStep) -> Aspect | None:
    """The part of the question a step researches (its title is the part's), or None."""
    return next((a for a in question_aspects(question, locale) if a.title == step.title), None)


def _cover_sources(ranked: list[RankedSentence], weights: dict[int, float], shown: int) -> list[RankedSentence]:
    """Give every page that is about the subject a chance: a relevant page with no sentence among
    the first `shown` gets its best-ranked one moved up, in place of the last pick of a page that
    already has several."""
    if not ranked:
        return ranked
    top = ranked[:shown]
    present = {r.source for r in top}
    relevant = [n for n, w in weights.items() if w >= 0.85 and n not in present]
    rest = ranked[shown:]
    for number in relevant:
        best = next((r for r in rest if r.source == number), None)
        if best is None:
            continue
        counts = {n: sum(r.source == n for r in top) for n in present}
        donors = [i for i in range(len(top) - 1, -1, -1) if counts[top[i].source] > 1]
        if not donors:
            break
        rest.remove(best)
        rest.insert(0, top.pop(donors[0]))
        top.append(best)
        present.add(number)
    return top + rest


class _Section(NamedTuple):
    title: str
    picked: list[dict[str, Any]]  # the ranked sentences this section shows
    report_md: str  # the step's own text, used when it has no ranked sentences
    extractive: bool  # the step ranked sentences (as opposed to a processing step)

    def only(self, keep: Callable[[dict[str, Any]], bool]) -> _Section:
        return self._replace(picked=[s for s in self.picked if keep(s)])


def _notes_sentences(result: StepResult) -> list[dict[str, Any]]:
    raw = result.notes.get("sentences") if isinstance(result.notes, dict) else None
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
_PART_EMPTY = {False: "_The sources found had nothing on this._", True: "_检索到的来源中没有关于这一点的内容。_"}


class _SubjectCheck(Protocol):
    def __call__(self, sentence: dict[str, Any], *, itself: bool = False) -> bool: ...


def _on_subject(question: str, locale: str, sources: Sequence[SourceRef]) -> _SubjectCheck:
    """Whether a sentence is about the question's subject, so that it may answer the question.

    A search also returns neighbouring pages (solar PV next to electric cars) whose best sentences
    can score well but answer another question. The subject is what most fetched pages share of the
    question's key terms (`_shared_subject`: "solar power" of "How cheap has solar power become");
    where they share less than two tokens (most pages are on a neighbour), the question's first key
    term joins it ("中国光伏装机"). A sentence is on the subject when it and its page's title together
    (`itself`: the sentence alone) hold half of the subject's tokens. With no subject at all, any key
    term will do. A page in another script cannot be compared word for word: it stays eligible.
    """
    titles = {ref.number: ref.title for ref in sources}
    foreign = {ref.number for ref in sources if not _same_script(locale, ref)}
    terms = _shared_subject(question, locale, sources)
    if len(terms) < 2:  # the fetched pages agree on little (most are on a neighbouring subject)
        first = next((t for t in key_terms(question, locale, fallback=False) if tokenize(t)), "")
        terms |= set(tokenize(first))
    need = math.ceil(len(terms) / 2)
    if not terms:
        terms, need = {token for term in key_terms(question, locale) for token in tokenize(term)}, 1

    def check(sentence: dict[str, Any], *, itself: bool = False) -> bool:
        if not terms or sentence["source"] in foreign:
            return True
        text = f"{sentence['text']} {'' if itself else titles.get(sentence['source'], '')}"
        return len(terms & set(tokenize(text))) >= need

    return check


def _answer_paragraph(answer: list[tuple[str, dict[str, Any]]], zh: bool) -> str:
    """One paragraph (soft line breaks): each part of the question in bold, then its quotes, one a
    line, so every cited sentence is still a verbatim quote with its citation at the line's end."""
    lines: list[str] = []
    for label, sentence in answer:
        if label:
            lines.append(f"**{label}**" if zh else f"**{label.rstrip('?')}?**")
        lines.append(_cite(sentence["text"], sentence["source"], zh))
    return "\n".join(lines)


def _cite(sentence: str, number: int, zh: bool) -> str:
    # Chinese sentences end in "。" and take the marker directly; English ones take a space.
    return f"{sentence}[{number}]" if zh and sentence[-1:] in "。！？" else f"{sentence} [{number}]"


class OfflineEngine:
    """Implements research.agents.types.Engine with extraction instead of a model."""

    name = "offline"

    def __init__(
        self, *, fetch_per_step: int = 4, sentences_per_step: int = 5, min_sentences: int = 3, per_source: int = 3
    ) -> None:
        self.fetch_per_step = fetch_per_step  # pages fetched per step (search hits beyond are not read)
        self.sentences_per_step = sentences_per_step  # sentences shown per step
        self.min_sentences = min_sentences  # off-facet sentences fill up to this many
        self.per_source = per_source  # soft cap per source, so one page doesn't fill a section

    # -- coordinator

    def coordinate(self, ctx: AgentContext) -> CoordinatorDecision:
        locale = detect_locale(ctx.question)
        if is_small_talk(ctx.question):
            if is_chinese(locale):
                answer = (
                    "你好！这里是离线引擎：不使用语言模型，而是通过检索和抽取来源原文来撰写报告。"
                    "请告诉我你想研究的问题。"
                )
            else:
                answer = (
                    "Hello! This is the offline engine: it writes reports without a language model, by "
                    "searching and quoting sources. Ask me a research question to get started."
                )
            return CoordinatorDecision("answer", locale, answer)
        return CoordinatorDecision("research", locale)

    # -- planner

    def plan(
        self,
        ctx: AgentContext,
        *,
        max_steps: int,
        background: str = "",
        feedback: str = "",
        previous: Plan | None = None,
    ) -> Plan:
        locale = ctx.locale or detect_locale(ctx.question)
        zh = is_chinese(locale)
        limit = max(1, max_steps)
        terms = key_terms(ctx.question, locale)
        extra_terms = _feedback_terms(feedback, zh) if feedback else []

        # The question's own parts first ("production", "safety"), then the generic facets fill the rest.
        aspects = question_aspects(ctx.question, locale)[:limit]
        keys = self._facet_keys(limit, feedback, previous, reserved=len(aspects)) if limit > len(aspects) else []
        if aspects:
            # A facet a part already asks about ("what limits …": challenges) gives way to the next one.
            covered = {f.key for a in aspects for f in question_facets(a.title)}
            dropped = set(_facet_mentions(feedback)[1]) if feedback else set()
            want = len(keys)
            keys = [k for k in keys if k not in covered]
            for key in _FACET_PRIORITY:
                if len(keys) >= want:
                    break
                if key not in keys and key not in covered and key not in dropped:
                    keys.append(key)
            keys = sorted(keys, key=_CANONICAL_ORDER.index)
        topic = " ".join(terms)
        steps: list[PlanStep] = []
        for aspect in aspects:
            query = " ".join([aspect.query, *extra_terms]).strip()
            steps.append(PlanStep(id=f"step-{len(steps) + 1}", title=aspect.title, description=query[:4000],
                                  step_type="research", need_search=True, depends_on=[]))
        for key in keys:
            facet = _FACET_BY_KEY[key]
            query = " ".join([topic, facet.query_zh if zh else facet.query_en, *extra_terms]).strip()
            steps.append(
                PlanStep(
                    id=f"step-{len(steps) + 1}",
                    title=_facet_title(facet, zh),
                    description=query[:4000],
                    step_type="research",
                    need_search=True,
                    depends_on=[],
                )
            )
        steps = readable_steps(steps, question=ctx.question, locale=locale)  # never split inside a clause
        facet_names = "、".join(s.title for s in steps) if zh else ", ".join(s.title for s in steps)
        if zh:
            thought = f"离线规划：先按问题的各部分、再按常见方面检索（{facet_names}）；关键词：{'、'.join(terms)}。"
            if feedback:
                thought += f"已根据反馈调整：{feedback.strip()}"
        else:
            thought = (
                f"Offline plan: one search step per part of the question, then per facet ({facet_names}); "
                f"key terms: {topic}."
            )
            if feedback:
                thought += f" Adjusted to the feedback: {feedback.strip()}"
        return Plan(
            locale=locale,
            title=_plan_title(ctx.question)[:300],
            thought=thought[:2000],
            has_enough_context=False,
            steps=steps,
        )

    def _facet_keys(self, limit: int, feedback: str, previous: Plan | None, reserved: int = 0) -> list[str]:
        """The facets for the steps left after `reserved` steps on the question's own parts."""
        limit -= reserved
        count = min(limit, len(CORE_FACETS))
        if previous is not None and previous.steps:
            count = min(limit, max(1, len(previous.steps) - reserved))
        wanted: list[str] = []
        dropped: list[str] = []
        if feedback:
            wanted, dropped = _facet_mentions(feedback)
            requested = _requested_count(feedback, count)
            if requested is not None:
                count = requested
            elif wanted and previous is not None:
                # "add key players": room for facets the previous plan lacked, within max_steps.
                had = {s.title for s in previous.steps}
                new = [k for k in wanted if not {_FACET_BY_KEY[k].title_en, _FACET_BY_KEY[k].title_zh} & had]
                count += len(new)
            if _ONLY.search(feedback.lower()) and wanted:
                count = len(wanted)
        count = max(1, min(limit, count))
        if count == 1 and not wanted:
            return ["current"] if reserved else ["overview"]
        pool = (
            [k for k in (*CORE_FACETS, *EXTRA_FACETS) if k != "overview"]
            if count > len(CORE_FACETS)
            else list(CORE_FACETS)
        )
        chosen = [k for k in wanted if k not in dropped][:count]
        for key in _FACET_PRIORITY:
            if len(chosen) >= count:
                break
            if key in pool and key not in chosen and key not in dropped:
                chosen.append(key)
        for key in _FACET_PRIORITY:  # everything else was dropped: fall back to what is left
            if len(chosen) >= count:
                break
            if key not in chosen and key not in dropped:
                chosen.append(key)
        return sorted(chosen, key=_CANONICAL_ORDER.index)

    # -- researcher

    def _queries(self, ctx: AgentContext, step: PlanStep) -> tuple[str, str, str]:
        """(search query, ranking query, focus): the step's words plus the question's key terms.

        The focus is the step's words that are not the question's topic: every fetched page is
        about the topic, so the facet ("history", "challenges") is what tells the steps apart.
        """
        locale = ctx.locale or detect_locale(ctx.question)
        terms = key_terms(ctx.question, locale)
        aspect = _aspect_of(ctx.question, locale, step)
        if aspect:  # a part's step searches for that part, not for the other parts too
            others = {w.lower() for a in question_aspects(ctx.question, locale) if a != aspect for w in a.words}
            terms = [t for t in terms if t.lower() not in others or t.lower() in aspect.query.lower()]
        base = step.description.strip() or step.title.strip()
        missing = [t for t in terms if t.lower() not in base.lower()]
        search_query = " ".join([base, *missing])[:400]
        rank_query = " ".join([step.title, step.description, *terms])
        own = set(tokenize(" ".join(aspect.words))) if aspect else set()
        topic = set(tokenize(" ".join(terms))) - own  # a part's own words are what it asks, not the subject
        words = textre.findall(r"[\w'’-]+", f"{step.title} {step.description}")
        facets = [] if aspect else _step_facets(step)
        words += [w for facet in facets for w in facet.hints.split()]
        if aspect:
            words += [w for facet in question_facets(aspect.title) for w in facet.hints.split()]
        elif not facets or facets == [_FACET_BY_KEY["overview"]]:
            # A step of no particular facet leans to what the question asks ("what limits …": challenges).
            words += [w for facet in question_facets(ctx.question) for w in facet.hints.split()]
        # The facet's words in both languages: sources in the other language still match the facet.
        words += [w for facet in facets for w in f"{facet.query_en} {facet.query_zh}".split()]
        focus = " ".join(dict.fromkeys(w.lower() for w in words if set(tokenize(w)) - topic))
        if aspect:
            # What the part asks ("limits" → the challenge words) counts even where it is a key term.
            asked = [w for facet in question_facets(aspect.title) for w in facet.hints.split()]
            focus = " ".join(dict.fromkeys([*focus.split(), *aspect.words, *asked]))
        return search_query, rank_query, focus

    def _gather(self, ctx: AgentContext, step: PlanStep, query: str) -> tuple[list[SourceRef], list[str]]:
        """Search and fetch; returns the fetched / knowledge-base sources and the errors met.

        A step that needs no search re-reads what the job already found, and searches only when
        nothing was found yet. A failed fetch is skipped and the next hit is tried instead.
        """
        options = ctx.options or {}
        use_web = options.get("web", True) is not False
        use_kb = bool(options.get("kb"))
        max_results = int(options.get("max_results") or 8)
        sources: list[SourceRef] = []
        errors: list[str] = []
        seen: set[int] = set()

        def keep(ref: SourceRef) -> bool:
            if ref.number in seen or not ref.text.strip():
                return False
            seen.add(ref.number)
            sources.append(ref)
            return True

        if not step.need_search:
            for ref in ctx.sources():
                keep(ref)
            if sources:
                return sources, errors

        if use_kb:
            ctx.check_cancelled()
            try:
                hits = ctx.kb_search(query, limit=self.fetch_per_step)
            except ToolError as exc:
                errors.append(f"knowledge base: {exc}")
                ctx.emit("step.activity", {"kind": "kb", "query": query, "error": str(exc)})
            else:
                ctx.emit("step.activity", {"kind": "kb", "query": query, "count": len(hits)})
                for ref in hits:
                    keep(ref)
        if use_web:
            ctx.check_cancelled()
            try:
                results = ctx.search(query, max_results=max_results)
            except ToolError as exc:
                errors.append(f"search: {exc}")
                ctx.emit("step.activity", {"kind": "search", "query": query, "error": str(exc)})
                results = []
            # Knowledge-base hits that a search provider mixed in are read through kb_search, not fetched.
            urls = [h.url for h in results if h.url and h.provider != "knowledge" and not h.url.startswith("kb://")]
            fetched = 0
            for url in dict.fromkeys(urls):
                if fetched >= self.fetch_per_step:
                    break
                ctx.check_cancelled()
                try:
                    fetched += keep(ctx.fetch(url))
                except ToolError as exc:
                    errors.append(f"{url}: {exc}")
                    ctx.emit("step.activity", {"kind": "fetch_failed", "url": url, "error": str(exc)})
        return sources, errors

    def research(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *,
                 variant: RunVariant | None = None) -> StepResult:
        if variant is not None:  # a heavy run: query variants, union reranked (offline_heavy.py)
            from research.agents.engines import offline_heavy

            return offline_heavy.research_run(self, ctx, step, plan, prior, variant)
        search_query, rank_query, _ = self._queries(ctx, step)
        sources, errors = self._gather(ctx, step, search_query)
        if not sources:
            detail = f" ({'; '.join(errors[:3])})" if errors else ""
            raise ToolError(f"no sources found for step '{step.title}'{detail}")
        ranked, fallback, candidates = self.rank_step(ctx, step, plan, sources, shown=self.sentences_per_step)
        ctx.emit(
            "step.activity",
            {"kind": "rank", "candidates": candidates, "selected": min(len(ranked), self.sentences_per_step)},
        )
        zh = is_chinese(ctx.locale or plan.locale)
        shown = ranked[: self.sentences_per_step]
        report_md = "\n".join(f"- {_cite(r.text, r.source, zh)}" for r in shown) + "\n"
        return StepResult(
            step_id=step.id,
            title=step.title,
            report_md=report_md,
            notes={
                "engine": self.name,
                "query": rank_query,
                "sources": [ref.number for ref in sources],
                "sentences": [{"text": r.text, "source": r.source, "score": r.score} for r in ranked],
                "fallback": fallback,
                "errors": errors,
            },
        )

    def rank_step(
        self,
        ctx: AgentContext,
        step: PlanStep,
        plan: Plan,
        sources: list[SourceRef],
        *,
        shown: int,
        lean: str = "",
        backing: Callable[[str], float] | None = None,
    ) -> tuple[list[RankedSentence], bool, int]:
        """(ranked sentences, fallback used, candidate count): the step's sentences from `sources`.

        `sources` are in search order (for a step that searched, its first hits weigh more). `lean`
        adds words to the step's focus (a heavy run's source-type emphasis); `backing(sentence)`
        multiplies a sentence's score (a heavy synthesis favours what several runs found). The
        first `shown` are the ones a section shows; a few more are ranked for the reporter to swap in.
        """
        locale = ctx.locale or plan.locale or detect_locale(ctx.question)
        aspect = _aspect_of(ctx.question, locale, step)
        own = set(tokenize(" ".join(aspect.words))) if aspect else set()  # never ignored as "the subject"
        _, rank_query, focus = self._queries(ctx, step)
        if lean:
            focus = f"{focus} {lean}".strip()
        candidates: list[tuple[str, int]] = []
        for ref in sources:
            candidates.extend((sentence, ref.number) for sentence in split_sentences(ref.text, locale)[:400])
        if not candidates:
            raise ToolError(f"no usable sentences in the {len(sources)} sources found for step '{step.title}'")
        weights = _source_weights(ctx.question, locale, sources)
        foreign_titles = _foreign_titles(locale, sources, weights)
        rank_query = " ".join([rank_query, *foreign_titles])
        if step.need_search:
            # The step's own search ranked the pages for what this step asks: its first hits are the
            # pages most about it (sources are in the order they were found).
            for rank, ref in enumerate(sources):
                weight = weights.get(ref.number, 1.0)
                # (Not when the pages on the subject are in another script: then a page in the
                # question's script that lacks its subject matched only a word or two, "量产".)
                if rank < 2 and not (foreign_titles and weight < 0.34 and _same_script(locale, ref)):
                    # The search engine's two best hits are on the subject even when they do not
                    # repeat the question's long terms ("公共充电桩" for "中国电动汽车充电桩").
                    weight = max(weight, 0.9)
                weights[ref.number] = weight * max(0.6, 1.0 - 0.1 * rank)
        if aspect and own:
            # A part's step prefers the pages that speak of that part at all.
            for ref in sources:
                if not own <= set(tokenize(f"{ref.title} {ref.text}")):
                    weights[ref.number] = weights.get(ref.number, 1.0) * 0.7
        base_prior = _figures_prior if _FACET_BY_KEY["figures"] in _step_facets(step) else _figures_bonus
        prior = base_prior if backing is None else (lambda text: base_prior(text) * backing(text))
        # Rank a few more than the step shows, so the reporter can swap out sentences other steps used.
        ranked = rank_sentences(
            rank_query,
            candidates,
            limit=shown * 2 + 2,
            locale=locale,
            per_source=self.per_source,
            focus=focus,
            prior=prior,
            source_weight=weights,
            diversity=0.3,
            floor=0.35,
            ignore=_shared_subject(ctx.question, locale, sources) - own,
        )
        ranked = _cover_sources(ranked, weights, shown)
        if ranked:
            return ranked, False, len(candidates)
        # Nothing shares a word with the query (e.g. another language): lead sentences, one per source.
        firsts: dict[int, str] = {}
        for sentence, number in candidates:
            firsts.setdefault(number, sentence)
        leads = list(firsts.items())[:shown]
        return [RankedSentence(text, number, 0.0, i) for i, (number, text) in enumerate(leads)], True, len(candidates)

    def synthesize(self, ctx: AgentContext, step: PlanStep, plan: Plan, runs: list[StepResult]) -> StepResult:
        from research.agents.engines import offline_heavy

        return offline_heavy.synthesize(self, ctx, step, plan, runs)

    # -- coder

    def process(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult:
        zh = is_chinese(ctx.locale or plan.locale)
        sentences: list[str] = []
        for result in prior:
            quoted = [s["text"] for s in _notes_sentences(result)]
            # Without ranked sentences (another engine's result), read its text minus the [n] markers.
            sentences += quoted or [_CITATION.sub(" ", result.report_md)]
        values = _numbers(sentences)
        notes: dict[str, Any] = {"engine": self.name, "values": values}
        if not values:
            text = (
                "前序步骤的来源句子中没有找到数值，因此没有可计算的内容。"
                if zh
                else "The sentences gathered by earlier steps contain no numbers, so there was nothing to compute."
            )
            return StepResult(step.id, step.title, text + "\n", notes=notes)

        ctx.check_cancelled()
        run = ctx.run_python(_STATS_CODE.format(values=json.dumps(values)))
        notes.update({"exit_code": run.exit_code, "timed_out": run.timed_out, "error": run.error})
        if zh:
            intro = f"离线引擎对前序步骤来源句子中出现的 {len(values)} 个数值做了简单的描述性统计（不含年份）。"
        else:
            intro = (
                f"The offline engine computed simple descriptive statistics of the {len(values)} numbers "
                "quoted in the earlier steps' source sentences (years left out)."
            )
        if run.error:
            outcome = f"沙箱拒绝运行代码：{run.error}" if zh else f"The sandbox refused to run the code: {run.error}"
            text = f"{intro}\n\n{outcome}\n"
        elif run.timed_out or run.exit_code != 0:
            detail = "timed out" if run.timed_out else f"exit code {run.exit_code}"
            outcome = f"代码运行失败（{detail}）。" if zh else f"The code run failed ({detail})."
            text = f"{intro}\n\n{outcome}\n"
        else:
            text = f"{intro}\n\n```\n{run.stdout.strip()}\n```\n"
        return StepResult(step.id, step.title, text, figures=list(run.figures), notes=notes)

    # -- reporter

    def report(
        self,
        ctx: AgentContext,
        plan: Plan,
        results: list[StepResult],
        *,
        style: str,
        on_delta: Callable[[str], None],
    ) -> str:
        zh = is_chinese(ctx.locale or plan.locale)
        by_step = {r.step_id: r for r in results}
        ordered = [by_step[s.id] for s in plan.steps if s.id in by_step]
        in_plan = {id(r) for r in ordered}
        ordered += [r for r in results if id(r) not in in_plan]  # results for steps no longer in the plan
        missing = [s for s in plan.steps if s.id not in by_step]

        part_titles = {a.title for a in question_aspects(ctx.question, ctx.locale or plan.locale)}
        assigned = self._assign(ordered, first={i for i, r in enumerate(ordered) if r.title in part_titles})
        sections = [
            _Section(r.title, picked, r.report_md, bool(_notes_sentences(r)))
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
        on_subject = _on_subject(ctx.question, ctx.locale or plan.locale, ctx.sources())
        answer = self._answer(ctx.question, aspects, [s.only(on_subject) for s in sections], on_subject)
        if answer:
            emit(f"{'## 答案' if zh else '## Answer'}\n\n{_answer_paragraph(answer, zh)}\n\n")
        used = {id(s) for _, s in answer}
        findings = [f for f in self._key_findings(ctx.question, sections, style, used) if id(f[1]) not in used]
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

        used |= {id(s) for _, s in findings}
        part_titles = {a.title for a in aspects}
        for section in sections:
            title, report_md = section.title, section.report_md
            picked = [s for s in section.picked if id(s) not in used]
            if picked:
                bullets = "\n".join(f"- {_cite(s['text'], s['source'], zh)}" for s in picked)
            elif title in part_titles:
                # Every part of the question keeps its section, if only to say where its answer is.
                if section.picked:
                    bullets = _PART_ANSWERED[zh]
                else:
                    bullets = _PART_EMPTY[zh]
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

    @staticmethod
    def _answer(
        question: str, aspects: list[Aspect], sections: list[_Section], on_subject: _SubjectCheck | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """The opening answer: for a question in parts, the best sentences of each part's step, labelled
        with the part; otherwise the best sentences of the steps on what the question asks."""
        chosen: list[tuple[str, dict[str, Any]]] = []

        def named(sentence: dict[str, Any]) -> float:
            return 1.25 if on_subject is not None and on_subject(sentence, itself=True) else 1.0

        def take(label: str, section: _Section, count: int) -> None:
            # Each quote of a part from another page first: one page rarely says everything.
            fresh = [s for s in section.picked if not any(near_duplicate(s["text"], c["text"]) for _, c in chosen)]
            # An answer states something specific: a figure helps, a short vague sentence does not.
            # A sentence that names the subject itself reads on its own ("其中纯电动…" leans on its page).
            fresh.sort(key=lambda s: -float(s.get("score") or 0) * _specific(s["text"]) * named(s))
            picks: list[dict[str, Any]] = []
            for sentence in fresh:
                if len(picks) < count and all(p["source"] != sentence["source"] for p in picks):
                    picks.append(sentence)
            picks += [s for s in fresh if s not in picks][: count - len(picks)]
            picks.sort(key=fresh.index)  # best first
            for sentence in picks:
                chosen.append((label if not any(lb == label for lb, _ in chosen) else "", sentence))

        if aspects:
            per_part = 2 if len(aspects) <= 2 else 1
            by_title = {s.title: s for s in sections}
            for aspect in aspects:
                if aspect.title in by_title:
                    take(aspect.title, by_title[aspect.title], per_part)
            return chosen
        asked = {f.title_en for f in question_facets(question)} | {f.title_zh for f in question_facets(question)}
        order = sorted(range(len(sections)), key=lambda i: (sections[i].title not in asked, i))
        for index in order:
            if len(chosen) >= 2:
                break
            take("", sections[index], 2 if sections[index].title in asked else 1)
        return chosen[:2]

    @staticmethod
    def _key_findings(
        question: str, sections: list[_Section], style: str, used: set[int] | None = None
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
                if used and id(sentence) in used:
                    continue
                if want and not any(near_duplicate(sentence["text"], c["text"]) for _, c in chosen):
                    chosen.append((section.title, sentence))
                    want -= 1
            if len(chosen) >= size:
                break
        return chosen[:size]

    def _assign(self, results: list[StepResult], first: set[int] | None = None) -> list[list[dict[str, Any]]]:
        """Share the sentences out between sections so that no two sections repeat each other.

        The steps on the question's own parts (`first`) pick first, all their sentences; then the
        other sections take turns by rank (every section's best sentence first, then every second
        best …), so a sentence that one step ranks first and another step only used as filler goes
        to the first.
        """
        ranked = [_notes_sentences(r) for r in results]
        # A heavy step's synthesis may show more than a standard step (its notes' `shown`).
        sizes = [_shown(r, self.sentences_per_step) for r in results]
        assigned: list[list[dict[str, Any]]] = [[] for _ in results]
        used: list[str] = []
        first = first or set()
        rounds = range(max((len(r) for r in ranked), default=0))
        turns = [(rank, i) for i in sorted(first) for rank in rounds]
        turns += [(rank, i) for rank in rounds for i in range(len(ranked)) if i not in first]
        for rank, index in turns:
            sentences = ranked[index]
            if rank >= len(sentences) or len(assigned[index]) >= sizes[index]:
                continue
            sentence = sentences[rank]
            if not any(near_duplicate(sentence["text"], u) for u in used):
                assigned[index].append(sentence)
                used.append(sentence["text"])
        return assigned

    # -- derived outputs

    def podcast_script(self, ctx: AgentContext, report_md: str) -> PodcastScript:
        from research.render.derive import podcast_script_from_markdown  # render imports lazily: keep agents light

        return podcast_script_from_markdown(report_md, locale=ctx.locale)

    def slide_outline(self, ctx: AgentContext, report_md: str) -> SlideOutline:
        from research.render.derive import slide_outline_from_markdown

        return slide_outline_from_markdown(report_md, locale=ctx.locale)
