"""Language helpers shared by both engines (no Django, no model)."""

from __future__ import annotations

from research import scripts, textre
from research.agents.zhtag import ZH_HEDGES, hedges_predicate, zh_beside_pieces, zh_tagged
from research.ir import STOP_WORDS

_LOCALES = {"kana": "ja-JP", "hangul": "ko-KR", "han": "zh-CN"}


def detect_locale(text: str, default: str = "en-US") -> str:
    """Guess the locale of a question from its script; good enough to pick a report language."""
    return _LOCALES.get(scripts.script_of(text), default)


def is_chinese(locale: str) -> bool:
    return locale.lower().startswith("zh")


# Words that carry no topic on their own. Used to pull key terms out of a question and by the
# offline engine's tokenizer; kept short on purpose so topic words are never dropped by accident.
STOPWORDS_EN = STOP_WORDS  # one list (research.ir) for ranking and for picking a question's key terms

# Question scaffolding in Chinese ("what is", "how", "please introduce" …), longest first so that
# "有哪些" is removed before "哪些". Single characters are only particles that rarely sit inside a
# word ("与" would break 参与, "了" would break 了解, so they are not here).
ZH_STOP_PHRASES: tuple[str, ...] = tuple(
    (
        "请介绍一下 介绍一下 请问 是什么 有哪些 怎么样 为什么 是否 能否 如何 怎样 怎么 "
        "什么 哪些 哪个 关于 我们 你们 一下 以及 请 吗 呢 吧 的"
    ).split()
)
# Adverbs that only look like an A-not-A ask (动不动 "at every turn", 时不时 "now and then").
_NOT_A_NOT_A = ("动不动", "时不时")


def _unhedged(chunk: str) -> list[str]:
    """A Chinese run cut at a hedge that stands before a predicate (电动车电池一般能用几年 → 电动车电池, 能用几年), by
    jieba's words and tags; 一般纳税人 stays whole."""
    if not any(h in chunk for h in ZH_HEDGES):
        return [chunk]
    tagged = zh_tagged(chunk)
    pieces, current = [], ""
    for i, (word, _) in enumerate(tagged):
        if hedges_predicate(word, tagged[i + 1][0] if i + 1 < len(tagged) else ""):
            pieces.append(current)
            current = ""
        else:
            current += word
    return [*pieces, current]


def zh_plain(question: str) -> str:
    """A Chinese question with its A-not-A asks written with 是否 ("空气炸锅会不会致癌" → "空气炸锅是否会致癌",
    值不值得买 → 是否值得买, 有没有用 → 是否有用): the form the parts and the subject model read. Users ask so
    often; the repeated verb is no word of the topic, and 是否 is an ask they already know."""
    out: list[str] = []
    i = 0
    while i < len(question):
        c = question[i]
        if (i + 2 < len(question) and question[i + 1] in "不没" and question[i + 2] == c and c not in "不没"
                and scripts.has_han(c) and question[i : i + 3] not in _NOT_A_NOT_A):
            out.append(f"是否{c}")
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)

_EN_WORD = textre.compile(r"[A-Za-z0-9][A-Za-z0-9+#'’\-]*")
# What "how" asks by (a closed class): the degree, never the topic. Not "how safe" or "how effective": those
# name what is asked about the subject, which a page may say in those words.
_HOW_DEGREE = frozenset(
    "much many soon often long far fast quickly slowly well badly big large small high low old early late "
    "likely frequently common widely".split())
_ZH_SPLIT = textre.compile("|".join(textre.escape(p) for p in ZH_STOP_PHRASES) + r"|[^\p{L}\p{N}]+")  # [\s\W_]


def key_terms(question: str, locale: str | None = None, *, fallback: bool = True) -> list[str]:
    """The topic words of a question, in order, without question scaffolding or stopwords.

    English: words minus stopwords (original spelling kept, so "GPT-4" survives).
    Chinese: the question cut at punctuation and question phrases into runs of ≥2 characters.
    With `fallback`, returns the stripped question when nothing else is left.
    """
    locale = locale or detect_locale(question)
    terms: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        term = term.strip("'’-")
        if term and term.lower() not in seen:
            seen.add(term.lower())
            terms.append(term)

    if is_chinese(locale) or scripts.has_han(question):
        for chunk in _ZH_SPLIT.split(zh_plain(question)):
            if scripts.has_han(chunk):
                # 空气源热泵比燃气壁挂炉省钱: two things set beside each other, two terms.
                for piece in (p for side in zh_beside_pieces(chunk) for p in _unhedged(side)):
                    if len(piece) >= 2:
                        add(piece)
            else:
                # Latin words inside a Chinese question ("AI", "GPU") are topic words too.
                for word in _EN_WORD.findall(chunk):
                    if word.lower() not in STOPWORDS_EN:
                        add(word)
    else:
        words = _EN_WORD.findall(question)
        for i, word in enumerate(words):
            if i and words[i - 1].lower() == "how" and word.lower() in _HOW_DEGREE:
                continue  # "how well", "how soon": the question's scaffolding, no topic word
            if word.lower() not in STOPWORDS_EN and (len(word) > 1 or word.isdigit()):
                add(word)
    if not terms and fallback:
        stripped = question.strip().strip("?？!！.。")
        return [stripped] if stripped else []
    return terms
