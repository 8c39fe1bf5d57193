"""Question analysis for the offline engine: small talk, the facets a plan is made of, re-plan
feedback; the parts of a question that asks several things live in parts.py and are re-exported
here (docs/offline-engine.md)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from research import scripts, textre
from research.agents.engines.offline.parts import Aspect, _aspect_of, question_aspects
from research.agents.rank import tokenize
from research.agents.synonyms import is_person, symptoms_in
from research.agents.text import STOPWORDS_EN, ZH_STOP_PHRASES, key_terms
from research.agents.types import PlanStep
from research.agents.words import zh_people, zh_tagged

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
    if scripts.has_common_han(zh):
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
    # A "how do I …" question's facets (HOW_FACETS): a procedure has steps, settings and pitfalls, not a
    # history or an outlook. Their aliases avoid "steps", which re-plan feedback uses for the plan's length.
    Facet(
        "steps",
        "Steps",
        "操作步骤",
        "how to step by step guide",
        "操作步骤 教程",
        ("walkthrough", "how-to", "操作步骤", "教程"),
        "install installed command 安装 命令",
    ),
    Facet(
        "options",
        "Options and configuration",
        "选项与配置",
        "options configuration settings",
        "选项 配置 设置",
        ("options", "configuration", "settings", "选项", "配置", "设置"),
        "option setting configure configuration environment variable default flag 选项 配置 参数 设置 默认",
    ),
    Facet(
        "pitfalls",
        "Common problems",
        "常见问题",
        "common problems errors troubleshooting",
        "常见问题 错误 排查",
        ("troubleshooting", "pitfalls", "errors", "常见问题", "排查", "错误"),
        "error errors fails failed warning mistake lose lost careful 错误 失败 注意 丢失",
    ),
)
_FACET_BY_KEY = {f.key: f for f in FACETS}
HOW_FACETS = ("steps", "options", "pitfalls")
CORE_FACETS = ("background", "current", "figures", "challenges", "outlook")
EXTRA_FACETS = ("actors", "comparison")  # used only when more than five steps are allowed or asked for
# Which facets survive when fewer steps are allowed: the most informative first.
_FACET_PRIORITY = ("current", "figures", "challenges", "outlook", "background", "actors", "comparison")
_CANONICAL_ORDER = ("overview", "steps", "options", "pitfalls", "background", "current", "figures", "actors",
                    "comparison", "challenges", "outlook")

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
            pattern = quoted if scripts.has_common_han(alias) else rf"\b{quoted}\b"
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
        if scripts.has_common_han(phrase):
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


# ---------------------------------------------------------------- what a part asks for

_HOW_ASK_EN = ("how do i", "how to", "how can i", "how should i")
_HOW_ASK_ZH = ("如何安装", "怎么安装", "怎样安装", "如何配置", "怎么配置")
_HOW_EN = ("install", "set up", "configure", "command")
_HOW_ZH = ("命令", "安装")
_MUCH_EN = ("how much", "how many", "how fast", "how large", "how big", "what share", "what percentage", "cost")
_MUCH_ZH = ("多少", "多大", "多快", "比例", "成本", "价格")


def _says(words: str, phrase: str) -> bool:
    """`phrase` in `words` (" "-joined and padded): a phrase of several words as whole words ("how to"
    is not in "how tough"), one word also as the start of a longer one ("install" in "installing")."""
    return f" {phrase} " in words if " " in phrase else f" {phrase}" in words


def _padded_words(text: str) -> str:
    """The text's words, lower-cased, " "-joined and padded, for `_says`."""
    return " " + " ".join(textre.findall(r"[\w']+", text.lower())) + " "


UNIT_KINDS = ("much", "who", "signs")  # the kinds of part whose answer `asked_unit` can recognise


def part_kind(text: str) -> str:
    """What a part asks for: "how" (a procedure: a command states it), "much" (a figure), "who" (a group
    of people), "signs" (symptoms: the signs of an illness, a drug's side effects) or "". How it asks
    comes first: "how do I install …" asks for a procedure, "how much does
    it cost to install …" (安装一台要多少钱) for a figure, though it names installing; a part that asks
    neither way and names a procedure ("which command lists the snapshots") asks for the procedure."""
    words = _padded_words(text)
    if any(_says(words, p) for p in _HOW_ASK_EN) or any(w in text for w in _HOW_ASK_ZH):
        return "how"
    if any(_says(words, p) for p in _MUCH_EN) or any(w in text for w in _MUCH_ZH) or _figure_unit(text):
        return "much"
    if _who_ask(text) is not None:
        return "who"
    if _asks_signs(text):
        return "signs"
    if any(_says(words, p) for p in _HOW_EN) or any(w in text for w in _HOW_ZH):
        return "how"
    return ""


# "Who should get it" asks for a group of people ("who makes …" asks for a maker, not for them); a sentence
# answers it where it names people and says they should ("recommended for all adults aged 50 and older"),
# "who is at risk" where it names people and their risk. An age alone is no answer: a trial's "adults aged
# 60 and older" are not who should get the vaccine. (asks in English, in Chinese; the cue in English, in
# Chinese.)
_WHO: tuple[tuple[tuple[str, ...], tuple[str, ...], textre.Pattern, textre.Pattern], ...] = (
    (("who is at risk", "who are at risk", "who is most at risk", "who is more likely", "who gets"),
     ("哪些人容易", "哪些人更容易", "哪些人风险", "哪些人是高危", "谁更容易", "高危人群"),
     textre.compile(r"\b(?:(?:high|higher|increased|greater|most)\s+risk|at\s+risk|more\s+likely|more\s+common|"
                    r"more\s+often|susceptible|vulnerable)\b", textre.I),
     textre.compile(r"高危|风险(?:更|较)?高|更容易|易感|多发")),
    (("who should", "who needs", "who need", "who must", "who can get", "who can take", "who can use",
      "who is eligible", "who are eligible", "who qualifies", "who benefits", "which people", "what people",
      "for whom"),
     ("哪些人", "什么人", "哪类人", "什么样的人", "谁应该", "谁需要", "谁适合", "适合谁", "哪些群体", "哪些人群"),
     textre.compile(r"\b(?:recommend\w*|eligible|advised|indicated|offered|candidates?|should)\b", textre.I),
     textre.compile(r"建议|推荐|应该|应当|适合|适用|需要|必须")),
)
# Groups of people that WordNet files as groups, not persons ("people" is a group there).
_PEOPLE_EN = frozenset({"people", "men", "elderly", "population", "public", "everyone", "anyone"})


# The signs of an illness, a drug's side effects: a sentence that names two symptoms or more answers it
# ("shortness of breath, nausea, and pain in the jaw"), in any words. English only: WordNet's symptoms.
_SIGNS_EN = ("signs", "sign of", "symptom", "side effect", "side effects", "side-effect", "side-effects",
             "adverse effect", "adverse effects", "warning sign")


@lru_cache(maxsize=8192)
def _lists_symptoms(text: str) -> bool:
    """Two symptoms or more named in the sentence (one verdict per text: see _people)."""
    return not scripts.has_han(text) and len(symptoms_in(text)) >= 2


_SYMPTOMS = textre.compile_guarded(r"\w+", accept=lambda m: _lists_symptoms(m.string))


def _who_ask(text: str) -> int | None:
    """Which way this part asks who (an index of _WHO), or None: it does not."""
    words = _padded_words(text)
    for index, (english, chinese, _, _) in enumerate(_WHO):
        if any(_says(words, p) for p in english) or any(p in text for p in chinese):
            return index
    return None


def _asks_signs(text: str) -> bool:
    return any(_says(_padded_words(text), p) for p in _SIGNS_EN)


@lru_cache(maxsize=8192)
def names_people(text: str, ask: int) -> bool:
    """Whether a sentence names a group of people (WordNet's persons in English: "adults", "patients"; in
    Chinese a noun with a person's ending, by jieba's words: 老年人, 孕妇) and has the cue. A sentence on
    "researchers" who "should" do something passes too, so this only orders a "who" part's sentences and
    tells whether it has an answer at all; it proves nothing about one. `ask`: an index of _WHO."""
    _, _, cue_en, cue_zh = _WHO[ask]
    if (cue_zh if scripts.has_han(text) else cue_en).search(text) is None:
        return False
    if scripts.has_han(text):
        return any(zh_people(word, flag) for word, flag in zh_tagged(text))
    return any(word in _PEOPLE_EN or is_person(word) for word in textre.findall(r"[a-z]+", text.lower()))


@lru_cache(maxsize=16)
def _people(ask: int) -> textre.Pattern:
    """A pattern that finds a sentence answering a "who" part. Its guard reads the sentence as a whole, so a
    refused match refuses every other match in that text too (one verdict per text, cached)."""
    def accept(match: textre.Match) -> bool:
        return names_people(match.string, ask)

    return textre.compile_guarded(r"\w+", accept=accept)


# What unit a part's answer is in, by how it asks: "几岁" wants an age, "how soon" a span of time, "how
# often" a rate. (ask phrases in English, in Chinese; the answer's unit), most specific first. A Chinese
# count is one to three digits after a non-digit, so "2023年" is a year, not a span.
_N_ZH = r"(?:^|\D)(?:\d{1,3}(?:\.\d+)?|[一二两三四五六七八九十半]+)"
# An English count in digits or words ("within about two hours", "a few weeks"): a closed
# class. Not "a year" alone: "300 euros a year" is a rate.
_N_EN = (r"(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|eighteen"
         r"|twenty|thirty|forty|fifty|sixty|ninety|a\s+few|several|a\s+couple\s+of|half\s+an?)")
_UNITS: tuple[tuple[tuple[str, ...], tuple[str, ...], textre.Pattern], ...] = (
    (("how often", "how many times", "how frequently"),
     ("多久一次", "多长时间一次", "几次", "多少次", "每年都", "每年要"),
     textre.compile(r"\b(?:every|each|per|a)\s+(?:year|month|week|day|season)\b|\bannual(?:ly)?\b|\bonce\b"
                    r"|\btwice\b|\b\d+\s+times\b|每(?:年|月|周|天|季|隔)|一年一次|" + _N_ZH + r"\s*次", textre.I)),
    (("how old", "what age", "which age", "until what age", "age limit"), ("几岁", "多少岁", "多大年龄", "年龄"),
     textre.compile(r"\bages?\s+(?:of\s+)?\d+|\baged\s+\d+|\b" + _N_EN + r"\s*(?:-|\s)?years?(?:-|\s)old\b"
                    r"|\b(?:under|over|older than|younger than)\s+(?:age\s+)?\d+\b|" + _N_ZH + r"\s*周?岁", textre.I)),
    (("how long", "how soon", "how quickly", "within what time"),
     ("多久", "多长时间", "几天", "几个月", "几小时", "几分钟", "多少天", "多少分钟", "多少小时"),
     textre.compile(r"\b" + _N_EN + r"\s*(?:(?:-|to|–|or)\s*" + _N_EN + r"\s*)?"
                    r"(?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b|"
                    + _N_ZH + r"\s*个?(?:秒|分钟|小时|天|周|星期|个月|年)", textre.I)),
    # A yield is a weight (per area or per head): "亩产" wants "每亩…约150公斤", "crop yield" "8 tonnes a hectare".
    (("crop yield", "yield per", "yields per", "harvest"), ("亩产", "单产", "收成"),
     textre.compile(r"\b\d[\d,.]*\s*(?:kg|kilo(?:gram)?s?|tonnes?|tons?|bushels?|pounds|lbs?)\b|"
                    r"\d[\d,.]*\s*[万千亿]*(?:公斤|千克|斤|吨)", textre.I)),
)


def _figure_unit(text: str) -> textre.Pattern | None:
    words = _padded_words(text)
    for english, chinese, unit in _UNITS:
        if any(_says(words, p) for p in english) or any(p in text for p in chinese):
            return unit
    return None


def asked_unit(text: str) -> textre.Pattern | None:
    """The unit a part's answer is stated in, as a pattern over sentences, or None: a figure's (see
    _UNITS), else for "who should …" people (`names_people`), for "the warning signs" symptoms."""
    unit = _figure_unit(text)
    ask = _who_ask(text) if unit is None else None
    if ask is not None:
        return _people(ask)
    if unit is None and _asks_signs(text):
        return _SYMPTOMS
    return unit



def _plan_title(question: str) -> str:
    title = " ".join(question.split())
    if len(title) > 120:
        cut = title[:120]
        title = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"
    return (title[:1].upper() + title[1:]) or "Research"


def _step_facets(step: PlanStep) -> list[Facet]:
    """Facets a step is about, judged by its title only (descriptions carry the topic's words,
    and "solid-state" must not make every step a "current state" step)."""
    title = step.title.lower()
    found: list[Facet] = []
    for facet in FACETS:
        names = (facet.title_en.lower(), facet.title_zh, *facet.aliases)
        if any(
            (n in title) if scripts.has_common_han(n) else textre.search(rf"\b{textre.escape(n)}\b", title)
            for n in names
        ):
            found.append(facet)
    return found


def question_facets(question: str) -> list[Facet]:
    """Facets the question itself asks about ("what limits …" → challenges, "现状如何" → current state)."""
    # "solid-state" is not a question about the current state: compounds are the topic's words.
    words = set(tokenize(textre.sub(r"\S+-\S+", " ", question)))
    found: list[Facet] = []
    how = part_kind(question) == "how"
    for facet in FACETS:
        if facet.key in HOW_FACETS and not how:
            continue  # a procedure's pitfalls ("warning", "lose") are not the warning signs of an illness
        names = (*facet.aliases, *facet.hints.split())
        if any(set(tokenize(n)) and set(tokenize(n)) <= words for n in names):
            found.append(facet)
    return found


__all__ = ["FACETS", "HOW_FACETS", "UNIT_KINDS", "Aspect", "Facet", "_aspect_of", "asked_unit", "is_small_talk",
           "part_kind", "question_aspects", "question_facets"]
