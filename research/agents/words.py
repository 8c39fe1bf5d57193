"""The word layer of the subject model (research/agents/subject.py) and its scope gate (scope.py): a
text's words in order (Chinese segmented by jieba through wordfreq, leftover characters joined back),
each word's frequency in general text (wordfreq's bundled lists), and a page read once for the
title, lead and counts the verdicts look at."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from research import scripts, textre
from research.agents.text import ZH_STOP_PHRASES
from research.agents.zhtag import quiet_jieba, zh_dictionary_count, zh_tagged
from research.ir import STOP_WORDS, stem

# Zipf frequency (log10 of uses per billion words). Below SPECIFIC a question word names its subject
# ("seagrass" 2.4, "GLP" 2.3, 城际 3.1, 固态 3.6); at or above it it is general ("carbon" 4.6, "surgery"
# 4.6, 铁路 5.1). A word of another page counts as a competing subject only when rarer still (RIVAL):
# "mangrove" 2.9 and "bariatric" 2.6 do, "sediment" 3.4 and "nausea" 3.5 do not.
SPECIFIC = 4.0
RIVAL = 3.0
# A page's own topic words, counted to see what else it is about, are rarer than this.
_TOPICAL = 5.0
# Words this common end a term ("of", "how", 的, 中国, 发展): they join no name.
_FUNCTION = 5.8
_JOINS = 6.0  # a Chinese character left over by the segmenter under this may belong to a word …
_RARE_CHAR = 4.5  # … alone, when it is this rare on its own (桩 3.9, 蓄 3.3; not 约 5.6)
_LEAD_WORDS = 60  # a page's lead: its first words after the title
_PAGE_CHARS = 20_000  # what a page is about shows long before this (and jieba reads ~1 MB/s)

_RUN = textre.compile(f"([{scripts.HAN}]+)|([^{scripts.HAN}]+)")
_HAS_LETTER = textre.compile(r"\p{L}")


@dataclass(frozen=True)
class Verdict:
    about: bool
    why: str
    # A rejection for want of evidence (the subject never named, named in passing, outnumbered), not for
    # naming another subject: the page may name the subject differently ("herpes zoster" for shingles), so
    # the offline engine keeps it at a low weight instead of turning it away.
    firm: bool = True


@lru_cache(maxsize=65536)
def zipf(word: str, lang: str) -> float:
    """How common a word is in general text, from wordfreq's bundled lists (0.0: never seen, so rare)."""
    from wordfreq import zipf_frequency  # imported late: its data loads on first use

    return float(zipf_frequency(word, lang))


@lru_cache(maxsize=8192)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    """LemmInflect's lemmas of a lower-cased English word by part of speech (one lookup per word)."""
    from lemminflect import getAllLemmas  # imported late: its lexicon loads on first use

    return dict(getAllLemmas(word))


@lru_cache(maxsize=8192)
def en_family(word: str) -> str:
    """An English word's family: its Porter2 stem (snowballstemmer), which joins derived forms
    ("insulation", "insulates": insul; "vaccine", "vaccination": vaccin). Too coarse to name a subject by
    ("product" is "production"); used only to see whether a page ever uses a word in any form."""
    return _porter2().stemWord(word.lower())


@lru_cache(maxsize=1)
def _porter2() -> Any:
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


def en_classes(word: str) -> frozenset[str]:
    """The parts of speech an English word can have, from LemmInflect's bundled lexicon ("reduce": VERB;
    "speed": NOUN or VERB; empty where it does not know the word). No tagger: offline, a word's possible
    classes are what there is, and they are enough to find where a question's subject ends."""
    return frozenset(_lemmas(word.lower()))


def en_base_verb(word: str) -> bool:
    """The word can be a verb in its base form ("reduce", "help", "heat"; not "reduced", "helps")."""
    return word.lower() in _lemmas(word.lower()).get("VERB", ())


def en_verb_only(word: str, before: str = "") -> bool:
    """A word that can only be a verb, here used as one: no part of a noun phrase ("How do I install
    ripgrep", "How many people bought Germany's 49-euro ticket"). Its base form anywhere; another form
    only after a noun (`before`): "desalinated water" after "does" is water of a kind. A form in -ing may
    be a noun ("charging", "fasting")."""
    classes = en_classes(word)
    if not classes or not classes <= {"VERB", "AUX"} or word.lower().endswith("ing"):
        return False
    if en_base_verb(word):
        return True
    # A past form after a word that can only be a noun ("people bought"); not an -s form, which may be a
    # plural the lexicon lacks ("automatic retries"), nor after "does" or an adjective.
    prior = en_classes(before) if before else frozenset()
    return ("NOUN" in prior and not prior & {"ADJ", "AUX"} and not word.lower().endswith("s")
            and before.lower() not in STOP_WORDS)


def en_verb_after(before: str, word: str) -> bool:
    """Whether `word` is the verb of a clause whose subject ends with `before`. A subject is a noun phrase,
    so the verb is a base-form word after a noun that can only be a verb ("speed cameras reduce",
    "fasting improve"), or that can be one after a plural ("heat pumps heat homes", "retries help"); a
    word after an adjective is still in the phrase ("automatic retries")."""
    before = before.lower()
    classes, prior = en_classes(word), en_classes(before)
    plural = before.endswith("s") and not before.endswith("ss")
    if not ("NOUN" in prior or plural or before.endswith("ing")):  # "fasting": a gerund is a noun
        return False
    only_verb = bool(classes) and classes <= {"VERB", "AUX"} and "ADJ" not in prior
    return en_base_verb(word) and (only_verb or plural)


def en_compared(word: str) -> bool:
    """A comparative or superlative adjective: cheaper, best, more."""
    low = word.lower()
    if low in ("better", "best", "worse", "worst", "more", "most", "less", "least"):
        return True
    lemmas = _lemmas(low).get("ADJ", ())
    # Not a noun in -er ("oven cleaner", "bottle warmer", "paint thinner"): that names a thing.
    return (bool(lemmas) and low.endswith(("er", "est")) and all(lemma != low for lemma in lemmas)
            and "NOUN" not in en_classes(low))


def en_participle_after(before: str, word: str) -> bool:
    """After "is/are …", whether `word` is the clause's participle ("Is the flu vaccine needed every year"):
    a word that can only be a verb, not in its base form, after a noun; a form in -ing stays a noun of
    the phrase ("coral reef bleaching"). Only the parts analysis asks this: the subject model's terms
    end at `en_verb_after`."""
    low = word.lower()
    classes = en_classes(word)
    noun_before = "NOUN" in en_classes(before) or before.lower().endswith("s")
    return (noun_before and bool(classes) and classes <= {"VERB", "AUX"} and not en_base_verb(word)
            and not low.endswith("ing"))


# Attribute nouns: what a question asks *about* its subject ("the warning signs of a heart attack", 固态电池的
# 产能), never the subject itself. A closed class, like stop words, so a list: frequency cannot tell
# "production" from "battery". The parts analysis, the scope gate and the subject model share it.
ASPECT_NOUNS_EN = frozenset((
    "limit limits cost costs price prices production mass safety efficiency efficient market growth number "
    "obstacle obstacles barrier barriers challenge challenges recycling use uses usage impact impacts effect "
    "effects future outlook prospects status state progress performance capacity output demand supply risk "
    "risks benefit benefits advantage advantages disadvantage disadvantages pros cons cause causes driver "
    "drivers share role problem problems size sign signs symptom symptoms type types kind kinds rate rates "
    "level levels amount trend trends history profit profits revenue premium premiums difference differences"
).split())
ASPECT_NOUNS_ZH = frozenset((
    "量产", "成本", "价格", "产能", "数量", "利用率", "现状", "发展", "挑战", "限制", "情况", "性能", "效率", "安全",
    "规模", "影响", "效果", "进展", "前景", "市场", "问题", "风险", "进度", "应用", "出口", "进口", "产量", "费用",
    "症状", "原因", "寿命", "好处", "坏处", "优点", "缺点", "利润", "收益", "收入", "投入", "亩产", "产值",
    "走势", "趋势", "增长", "增速", "变化",
))

# Attribute nouns that ask the same thing: a page answers "the warning signs" with "symptoms" and "费用"
# with "成本". A closed class, like the attribute nouns themselves; each group's words stand for each other
# in what a part asks (research/agents/engines/offline/parts.py), never in a subject.
ASPECT_KIN: tuple[frozenset[str], ...] = tuple(frozenset(group.split()) for group in (
    "sign signs symptom symptoms",
    "cost costs price prices expense expenses premium premiums",
    "risk risks danger dangers hazard hazards",
    "benefit benefits advantage advantages",
    "disadvantage disadvantages drawback drawbacks downside downsides",
    "effect effects impact impacts",
    "cause causes caused reason reasons because due driven blamed",  # how a reason is stated, for "why" parts
    "obstacle obstacles barrier barriers challenge challenges",
    "effective effectiveness efficacy efficacious",
    "症状 征兆 迹象",
    "成本 费用 价格 花费",
    "风险 危险",
    "好处 益处 优点",
    "坏处 缺点 弊端",
    "原因 起因 因为 由于 导致",
    "profit profits earnings",
    "利润 收益 纯收入 盈利 赚",
    "亩产 每亩 产量",
    # Being paid back for a loss: 赔 is asked in one character (钱能赔多少), a page says 补偿 or 偿付.
    "赔 赔偿 补偿 赔付 偿付 理赔",
    "compensation compensate compensated payout payouts refund refunds reimbursement",
))


# "How well does it work" asks how effective it is: "well" leads to that group, but is none of its words ("as
# well" answers nothing). Only words after "how" look it up (question_aspects).
_KIN_OF = {"well": "effective"}


def aspect_kin(word: str) -> tuple[str, ...]:
    """The other words of an attribute noun's group ("signs" → sign, symptom, symptoms), or ()."""
    low = word.lower()
    key = _KIN_OF.get(low, low)
    return tuple(sorted(w for group in ASPECT_KIN if key in group for w in group if w != low))


def _norm(word: str) -> str:
    return stem(word) if word.isascii() else word


@lru_cache(maxsize=512)
def _analysed(text: str) -> tuple[tuple[str, ...], dict[str, float]]:
    """The text's words in order, lower-cased, English ones lightly stemmed: Han runs segmented by jieba
    (through wordfreq), other runs by wordfreq's Unicode word rules ("GLP-1" is "glp" + "1"); and each
    word's frequency, that of its commonest spelling in the text ("accelerat" is as common as
    "accelerated")."""
    out: list[str] = []
    freq: dict[str, float] = {}
    for surface, lang in _raw_words(text):
        normed = _norm(surface)
        out.append(normed)
        freq[normed] = max(freq.get(normed, 0.0), zipf(surface, lang))
    return tuple(out), freq


def words(text: str) -> tuple[str, ...]:
    return _analysed(text)[0]


def _rare_words(text: str, limit: float, skip: frozenset[str]) -> list[str]:
    """The text's words (in order) rarer than `limit` in general text, other than `skip`."""
    seq, freq = _analysed(text)
    return [w for w in seq if w not in skip and _wordlike(w) and freq[w] < limit]


def _compounds(segmented: list[str]) -> list[str]:
    """jieba's dictionary lacks some compounds and leaves characters over (光 + 伏, 风 + 电, 充电 + 桩):
    content characters (not 的, 和, 在 …) left side by side make one word (光伏), and one left alone that
    is rare as a word on its own (桩, 蓄; not 约) joins the word before it (充电桩), in the question and the
    pages alike."""
    out: list[str] = []
    loose: list[str] = []
    prefix = ""  # a rare character with no word before it starts the next word (钠 + 离子, 锂 + 电池)

    def flush(following: str = "") -> str:
        """Place the characters gathered so far; returns one that must start the next word. The last of
        them is said of the words before when a grammar word follows (取暖费 + 差 + 多少, 房价 + 涨 + 了):
        it stays a character of its own."""
        said = loose.pop() if loose and following and _said_before(loose[-1], following) else ""
        held, rare = list(loose), len(loose) == 1 and zipf(loose[0], "zh") < _RARE_CHAR
        loose.clear()
        placed = flush_held(held, rare)
        if said:
            out.extend([placed, said] if placed else [said])
            return ""
        return placed

    def flush_held(held: list[str], rare: bool) -> str:
        if len(held) >= 2:
            out.append("".join(held))  # 光伏, 风电
        elif rare and out and len(out[-1]) >= 2 and _takes_character(out[-1]):
            out[-1] += held[0]  # 充电桩; not 充电桩约, nor 一般赔
        elif rare:
            return held[0]
        else:
            out.extend(held)
        return ""

    for w in segmented:
        if len(w) == 1 and scripts.has_han(w) and zipf(w, "zh") < _JOINS:
            loose.append(w)
            continue
        prefix = flush(w)
        # Never onto a grammar word: 赔 + 多少 is "pay how much", not a word 赔多少 (nor 赔吗).
        out.extend(([prefix] if prefix else []) + [w] if prefix and _zh_grammar(w) else [prefix + w])
    prefix = flush()
    if prefix:
        out.append(prefix)
    return out


# What follows a predicate: aspect particles (了, 过, 着), modal particles (吗) and "how much" (多少, 几).
_ZH_AFTER_PREDICATE = frozenset("ul ug uz y m".split())


def _said_before(char: str, following: str) -> bool:
    """A loose character is a predicate, not the end of a word: an adjective before 多少 / 吗 / 了 (差, 贵, 少),
    or a verb before an aspect particle (涨了). 光伏 + 的 keeps its 伏."""
    tags = [flag for _, flag in zh_tagged(following)]
    if not tags or tags[0] not in _ZH_AFTER_PREDICATE:
        return False
    flag = zh_tagged(char)[0][1]
    return flag == "a" or (flag == "v" and tags[0] in ("ul", "ug", "uz"))


def _takes_character(word: str) -> bool:
    """Whether a loose character may end this word: not a grammar word, adjective or adverb (一般)."""
    flags = [flag for _, flag in zh_tagged(word)]
    return not _zh_grammar(word) and not (flags and all(flag in ("a", "ad", "d") for flag in flags))


def _raw_words(text: str) -> list[tuple[str, str]]:
    """(surface word, language) of the text in order, for frequencies (which want the unstemmed word)."""
    from wordfreq import tokenize as wf_tokenize

    out: list[tuple[str, str]] = []
    for han, other in _RUN.findall(text):
        if han:
            quiet_jieba()
            out.extend((w, "zh") for w in _compounds(_names_whole(han, wf_tokenize(han, "zh"))))
        elif other.strip():
            # A possessive names its owner: "restic's repository" is restic's, not a word "restic'".
            out.extend((_owner(w), "en") for w in wf_tokenize(other, "en"))
    return out


# jieba's tags for names (a person's, a transliteration, another proper noun): 阿莫西林, 对乙酰氨基酚, 布洛芬.
_ZH_NAME_TAGS = frozenset(("nr", "nrt", "nz"))


def _names_whole(text: str, pieces: list[str]) -> list[str]:
    """wordfreq's pieces of a Chinese run with the names jieba's dictionary tags as names kept whole: wordfreq
    cuts 阿莫西林 into 阿 + 莫西 + 林, and the loose 阿 then joined the word before (吃阿). Two to six pieces that
    make such a name of three characters or more are one piece, unless a short one starts or ends with a grammar
    character (呢大衣, 在城镇 are tagged so too; 对乙酰氨基酚 is long enough to be a name). A dictionary lookup per
    span, no tagging of the text."""
    if len(pieces) < 2 or not any(len(p) == 1 for p in pieces):
        return pieces
    tags = _name_tags()
    out: list[str] = []
    i = 0
    while i < len(pieces):
        for j in range(min(len(pieces), i + 6), i + 1, -1):
            name = "".join(pieces[i:j])
            if (3 <= len(name) <= 8 and tags.get(name) in _ZH_NAME_TAGS
                    and (len(name) > 4 or not (_zh_grammar(name[0]) or _zh_grammar(name[-1])))):
                out.append(name)
                i = j
                break
        else:
            out.append(pieces[i])
            i += 1
    return out


@lru_cache(maxsize=1)
def _name_tags() -> dict[str, str]:
    import jieba.posseg as posseg

    quiet_jieba()
    return dict(posseg.dt.word_tag_tab)


def _owner(word: str) -> str:
    for mark in ("'s", "’s", "'", "’"):
        if word.endswith(mark) and len(word) > len(mark) + 1:
            return word[: -len(mark)]
    return word


def _wordlike(word: str) -> bool:
    """Letters, and in Chinese two characters or more (one character is rarely a name on its own)."""
    if not _HAS_LETTER.search(word):
        return False
    return len(word) >= 2


def _function_word(word: str, lang: str) -> bool:
    if lang == "en":
        return word in STOP_WORDS or zipf(word, lang) >= _FUNCTION
    return word in ZH_STOP_PHRASES or zipf(word, lang) >= _FUNCTION or _zh_grammar(word)


# jieba's part-of-speech tags of words that never name a subject: pronouns and question words (每周, 哪个),
# numerals and measures (多少, 几岁), adverbs (都, 更好), locatives (中, 以前), prepositions, conjunctions,
# particles and time words (赛前). Verbs stay: Chinese names many subjects with them (抽水蓄能, 疲劳驾驶).
_ZH_GRAMMAR_TAGS = frozenset("r m mq q d f p c u uj ul uz uv ud ug y e o t tg".split())
_ZH_MODALS = frozenset("应该 应当 需要 能够 可以 可能 必须 值得 要 会 能 该".split())




# A Chinese noun for people ends in one of these (老年人, 患者, 驾驶员, 儿童, 孕妇, 婴儿), or is a group of them.
_PERSON_END_ZH = frozenset("人者员童妇孩婴儿")
_PEOPLE_ZH = frozenset({"人群", "群体", "人们", "老人", "孩子", "家长", "父母"})
_NOT_PEOPLE_ZH = frozenset({"机器人", "个人", "本人", "收入", "投入", "加入", "介入", "深入", "输入", "出入"})


def zh_people(word: str, flag: str) -> bool:
    """A Chinese word, with its jieba tag, names people: a noun with a person's ending, or a group of them."""
    return (flag.startswith("n") and (word in _PEOPLE_ZH or (len(word) >= 2 and word[-1] in _PERSON_END_ZH))
            and word not in _NOT_PEOPLE_ZH)


# What a Chinese question says of a thing, never part of its name: adjectives and adverbs (一般, 少, 好) and
# modal particles (吗). jieba's tags.
_ZH_SAID = frozenset("a ad d".split())
# The "how" and "why" of a question: the verb after one is what is asked about the subject (怎么查看电池损耗),
# not a word of its name. A closed class, unlike 哪些 (which), after which a noun follows.
ZH_HOW = ("怎么", "怎样", "如何", "为什么", "为何")
# "和单种水稻相比": the verb of a comparison frame says how the thing before it is used, not what it is.
ZH_COMPARE_VERBS = ("相比", "相较", "比较", "对比", "相比较")


_ZH_DEGREE_HEADS = "更最"  # "more", "most" before an adjective
ZH_PREDICATE_TAGS = frozenset({"a", "ad", "an", "v", "vn", "vd"})  # jieba's adjectives and verbs
_GLUED = 3  # jieba's dictionary counts this low or lower: no word of its own (更多 2, 最多 3; 更好 2461)


def zh_unglued(word: str) -> list[str]:
    """A Chinese word the segmenter glued to what is said of it, as its pieces: 尼古丁少 → 尼古丁 + 少,
    多好 → 多 + 好 (the tagger's pieces, where the last is an adjective or adverb and the first is not)."""
    if (len(word) >= 2 and word[0] in _ZH_DEGREE_HEADS and zh_dictionary_count(word) <= _GLUED
            and {flag for _, flag in zh_tagged(word[1:])} <= ZH_PREDICATE_TAGS):
        # 更难: "harder", glued by the segmenter; 更新 and 最近 are words, 最低工资 a noun (低工资 is no predicate)
        return [word[0], word[1:]]
    tags = zh_tagged(word) if scripts.has_han(word) else ()
    if len(tags) >= 2 and tags[-1][1] in _ZH_SAID and tags[0][1] not in _ZH_SAID:
        return ["".join(w for w, _ in tags[:-1]), tags[-1][0]]
    return [word]


def zh_said_of(word: str, *, after_noun: bool) -> bool:
    """A Chinese word that says something of the words before it instead of naming: one ending in a modal
    particle (有用吗: jieba's dictionary keeps it whole), or, after a noun, a common adjective or adverb
    (杀菌 + 一般: "usually") or the verb of a comparison (单种水稻 + 相比). A rare adjective opening a term
    names a kind (疲劳驾驶) and stays."""
    if not scripts.has_han(word) or _zh_grammar(word):
        return False
    if after_noun and word in ZH_COMPARE_VERBS:
        return True
    tags = zh_tagged(word)
    if (len(word) >= 2 and [flag for _, flag in zh_tagged(word[-1])] == ["y"]
            and [flag for _, flag in zh_tagged(word[:-1])] in (["v"], ["a"])):
        return True  # 有用 + 吗; not 毛呢 (毛 is a noun) nor 喇嘛
    # Only a very common one (一般, 严重): 视力模糊 and 老年人孤独 are names of their own.
    return after_noun and len(tags) == 1 and tags[0][1] in _ZH_SAID and zipf(word, "zh") >= _TOPICAL


def zh_asked_verb(word: str, previous: str, following: str) -> bool:
    """A verb right after 怎么, 如何 … with its object after it: the action the question asks about (查看 of
    怎么查看电池损耗). Alone, the verb is the subject itself (为什么失眠, 怎么备孕). (Any content word counts
    as the object: jieba tags 显卡 a verb.)"""
    tags = zh_tagged(word) if previous in ZH_HOW and following and not _zh_grammar(following) else ()
    return len(tags) == 1 and tags[0][1] == "v"


def _zh_grammar(word: str) -> bool:
    """A Chinese grammar word, not a content word (its dictionary tag: see _ZH_GRAMMAR_TAGS)."""
    if word in _ZH_MODALS:
        return True
    tags = [flag for _, flag in zh_tagged(word)]
    return bool(tags) and all(flag in _ZH_GRAMMAR_TAGS for flag in tags)


@dataclass(frozen=True)
class _Page:
    title: str
    text: str
    counts: Counter[str]
    freq: dict[str, float]
    title_words: frozenset[str]
    lead: frozenset[str]
    lead_text: str
    title_seq: tuple[str, ...]
    body_seq: tuple[str, ...]

    # A Chinese word is counted in the raw text, not among the segmenter's words: jieba cuts the same
    # word differently in different sentences (公共充电桩约 gave 充电 + 桩约), and 城际 is still never in 城市.
    # An English compound of common words ("heart attack": see `compound`) is counted as a compound.
    def hits(self, word: str) -> int:
        if scripts.has_han(word):
            return self.title.count(word) + self.text.count(word)
        if " " in word:
            return _compound_count(self.title_seq, word) + _compound_count(self.body_seq, word)
        return self.counts.get(word, 0)

    def names_family(self, word: str) -> bool:
        """The page uses the word in some form, derived ones included ("insulates", "vaccination")."""
        if scripts.has_han(word) or " " in word or not word.isascii():
            return self.hits(word) > 0
        family = en_family(word)
        return any(w.isascii() and en_family(w) == family for w in self.counts)

    def in_title(self, word: str) -> bool:
        if scripts.has_han(word):
            return word in self.title
        return _compound_count(self.title_seq, word) > 0 if " " in word else word in self.title_words

    def in_lead(self, word: str) -> bool:
        if scripts.has_han(word):
            return word in self.lead_text
        return _compound_count(self.body_seq[:_LEAD_WORDS], word) > 0 if " " in word else word in self.lead


def compound(words: Sequence[str]) -> str:
    """An English compound of (normalised) words as one name a page is searched for: "heart attack"."""
    return " ".join(words)


def _compound_count(seq: Sequence[str], name: str) -> int:
    """How often a compound is named: its last word with each other word among the three words before
    it ("solid-state battery" names "solid battery"; "panic attack" does not name "heart attack")."""
    *modifiers, head = name.split(" ")
    return sum(1 for i, w in enumerate(seq) if w == head and all(m in seq[max(0, i - 3) : i] for m in modifiers))


@lru_cache(maxsize=256)
def _page(title: str, text: str) -> _Page:
    text = text[:_PAGE_CHARS]
    head, head_freq = _analysed(title)
    body, freq = _analysed(text)
    merged = {w: max(head_freq.get(w, 0.0), freq.get(w, 0.0)) for w in {*head_freq, *freq}}
    return _Page(title=title, text=text, counts=Counter(head) + Counter(body), freq=merged,
                 title_words=frozenset(head), lead=frozenset(body[:_LEAD_WORDS]),
                 lead_text="".join(body[:_LEAD_WORDS]), title_seq=head, body_seq=body)


_CONTRACTION_RARE = 3.0  # Zipf: a pair of characters this rare is no word of its own (稻虾 is 0; 小田 is a name)
# Noun suffixes (a closed class) carry no meaning of their word: 子 of 鸭子 never stands for it (稻子 is rice).
_NOUN_SUFFIXES = frozenset("子儿头们者")


@lru_cache(maxsize=256)
def zh_contractions(terms: tuple[tuple[str, tuple[str, ...]], ...], title: str,
                     body: str) -> tuple[tuple[str, str], ...]:
    """(contraction, the two terms it joins) for each Chinese contraction of two subject terms a page uses:
    a character of each, in either order, as a rare pair (稻虾 and 虾稻 for 稻田 and 小龙虾, as 医保 is 医疗保险),
    in the title or twice on the page, outside the terms themselves."""
    names = [text for text, _ in terms if scripts.has_han(text) and len(text) >= 2]
    if len(names) < 2:
        return ()
    in_title, in_body = _pairs(title), _pairs(body[:_PAGE_CHARS])
    found: dict[str, str] = {}
    for first in names:
        for second in names:
            if first == second:
                continue
            for pair in (a + b for a in dict.fromkeys(first) for b in dict.fromkeys(second)):
                if pair in found or (not in_title[pair] and in_body[pair] < 2):
                    continue
                if (scripts.count_han(pair) == 2 and zipf(pair, "zh") < _CONTRACTION_RARE
                        and not set(pair) & _NOUN_SUFFIXES):
                    found[pair] = first + second
    return tuple(sorted(found.items()))


def _pairs(text: str) -> Counter[str]:
    """Two-character words of a Chinese text as the segmenter reads it, or two one-character words side by
    side (it splits an unknown 稻鸭 as often as not); never two characters across longer words (青田稻鱼
    holds 田稻 but says 青田 and 稻鱼)."""
    seq = [w for w, _ in zh_tagged(text)]
    found: Counter[str] = Counter(w for w in seq if len(w) == 2)
    found.update(a + b for a, b in zip(seq, seq[1:], strict=False) if len(a) == len(b) == 1)
    return found
