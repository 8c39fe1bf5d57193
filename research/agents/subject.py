"""What a question is about, and whether a page or a sentence is about the same thing (docs/offline-engine.md,
"The subject model").

A search for "side effects of GLP-1 drugs" also returns pages on the side effects of surgery: they share
the question's words, but not its subject. The subject model tells the two kinds of words apart with
data, not a hand list: a word's frequency in general text (the `wordfreq` package, bundled data for
English and Chinese; Chinese is segmented into words by jieba, so 城际铁路 is 城际 + 铁路 and 城市地铁 is
城市 + 地铁, and the shared characters 城/铁 match nothing). A rare word ("seagrass", "GLP", 城际) is
SPECIFIC: it names the subject. A common one ("side effects", "loss", "carbon", 发展, 铁路) is GENERAL:
it says what is asked about the subject. A run of content words in the question is one term
("seagrass meadows", "GLP-1 drugs", 城际铁路); a text names the term by its head, the first specific word
("seagrass"), or less surely by another of its specific words. A Chinese word is looked for in the raw
text, since jieba may cut it differently in a page than in the question.

- `subject_of(question, locale)` builds the model; a part with no specific term of its own ("How
  fast are they being lost?") takes its parent question's (`within=`).
- `page_about(subject, title, text)` is a `Verdict`: the page names the subject in its title or lead,
  or more often than any other specific word ("unlike GLP-1 drugs, surgery …" is a passing mention).
- `sentence_about(subject, sentence, context=…, title=…)`: the sentence names the subject, or its page
  is about the subject and the sentence names no competing specific word ("They are lost at 7% a year"
  on a seagrass page is about seagrass; "Mangroves are lost at 1% a year" there is not).
- `claim_about` is the claim check's relevance verdict (research.report.check).

A question whose words are all common ("What drove inflation in 2021?") has no specific term: then
every page and sentence is taken as about it, and the lexical ranking alone decides, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from research import scripts, textre
from research.agents import synonyms
from research.agents.beside import _before_comparison, _plain_mention_of
from research.agents.clauses import (
    BESIDE_MARK,
    ZH_PREDICATE_OPENERS,
    ZH_YES_NO,
    clause_words,
    letter_name,
    sets_beside,
)
from research.agents.definitions import lead_defines
from research.agents.scope import COMMON_HEAD, is_aspect, scope_verdict, subject_phrase
from research.agents.text import ZH_STOP_PHRASES, zh_plain
from research.agents.words import (  # noqa: F401  (the word layer; names kept importable from here)
    _FUNCTION,
    _HAS_LETTER,
    _JOINS,
    _LEAD_WORDS,
    _PAGE_CHARS,
    _RARE_CHAR,
    _RUN,
    _TOPICAL,
    _ZH_MODALS,
    RIVAL,
    SPECIFIC,
    ZH_HOW,
    ZH_PREDICATE_TAGS,
    Verdict,
    _analysed,
    _compounds,
    _function_word,
    _norm,
    _Page,
    _page,
    _rare_words,
    _raw_words,
    _wordlike,
    _zh_grammar,
    compound,
    en_compared,
    en_verb_after,
    en_verb_only,
    words,
    zh_asked_verb,
    zh_contractions,
    zh_people,
    zh_said_of,
    zh_tagged,
    zh_unglued,
    zipf,
)
from research.agents.zhtag import hedges_predicate
from research.ir import STOP_WORDS

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Term:
    """A run of content words of the question ("seagrass meadows"); `core` are its specific words, in order."""

    text: str
    words: tuple[str, ...]
    core: tuple[str, ...]
    common: bool = False  # a compound of common words, no specific word in it ("heart attack")

    @property
    def head(self) -> str:
        return self.core[0]


@dataclass(frozen=True)
class Subject:
    question: str
    locale: str
    terms: tuple[Term, ...]  # specific terms: what the question is about
    general: tuple[str, ...]  # the question's other content words: what it asks about them
    vocabulary: frozenset[str] = field(default_factory=frozenset)  # every content word of the question
    competitors: frozenset[str] = field(default_factory=frozenset)  # what near-miss pages are about
    # (another name, the question's word): WordNet's single-meaning synonyms ("zoster" for shingles)
    aliases: tuple[tuple[str, str], ...] = ()
    # (abbreviation, the subject's name) a page defines (`on_page`); read in its own case ("ME" is not "me")
    abbreviations: tuple[tuple[str, str], ...] = ()

    def read(self, text: str) -> str:
        """A page's text as the subject model reads it: other names of the question's words replaced
        by the question's own ("Recombinant zoster vaccine" → "Recombinant shingles vaccine")."""
        return synonyms.rewrite(synonyms.rewrite(text, self.aliases), self.abbreviations, any_case=False)

    def on_page(self, title: str, text: str) -> Subject:
        """The subject as one page names it: with the abbreviations the page defines for a subject term
        ("幽门螺杆菌（Hp）", "buy now, pay later (BNPL)") read as that term on the page."""
        terms = tuple((t.text, t.core) for t in self.terms)
        found = tuple(sorted(_page_abbreviations(terms, title, text) + zh_contractions(terms, title, text),
                             key=lambda pair: -len(pair[0])))
        if not found or found == self.abbreviations:
            return self
        return replace(self, abbreviations=found)

    @property
    def specific(self) -> bool:
        return bool(self.terms)

    def describe(self) -> str:
        return ", ".join(t.text for t in self.terms) or "(no specific term)"


# An abbreviation in brackets after a name: "(BNPL)", "（Hp）", "(mTBI)". Capitals in it, ten characters at most.
_ABBREVIATION = textre.compile(r"[（(]\s*([A-Za-z][A-Za-z0-9.&-]{1,9})\s*[）)]")
_HAN_TAIL = textre.compile(f"[{scripts.HAN}]+$")
_EN_WORD = textre.compile(r"[A-Za-z][A-Za-z'’]*")


@lru_cache(maxsize=256)
def _page_abbreviations(terms: tuple[tuple[str, tuple[str, ...]], ...], title: str,
                        body: str) -> tuple[tuple[str, str], ...]:
    """(abbreviation, the name it stands for) for each abbreviation a text defines for a subject term
    (`terms`: each term's text and specific words): the name right before the brackets is a name of the
    subject. In English the letters are the initials of the words before the bracket and those words hold a
    specific word of a term ("spray polyurethane foam (SPF)"); in Chinese the characters from the term's word
    to the bracket are the term or its start (我国成人幽门螺杆菌（Hp） → 幽门螺杆菌; not 幽门螺杆菌感染是胃癌（GC）)."""
    # (Title and body apart: the cache then keys on the page's own strings, whose hashes Python keeps.)
    text = f"{title}\n{body}"
    found: dict[str, str] = {}
    for match in _ABBREVIATION.finditer(text):
        short = match.group(1)
        if not any(ch.isupper() for ch in short):
            continue
        before = text[max(0, match.start() - 80): match.start()].rstrip()
        han = _HAN_TAIL.search(before)
        if han:
            run = han.group(0)
            at = min((run.find(c) for _, core in terms for c in core if c in run), default=-1)
            name = run[at:] if at >= 0 else ""
            if not any(text.replace(" ", "").startswith(name) for text, _ in terms):
                name = ""
        else:
            letters = [ch.lower() for ch in short if ch.isalpha()]
            tail = _EN_WORD.findall(before)[-len(letters):]
            name = " ".join(tail) if [w[0].lower() for w in tail] == letters else ""
            if not any(c in _norm_words(name) for _, core in terms for c in core):
                name = ""
        if name and len(name) > len(short):
            found.setdefault(short, name)
    return tuple(sorted(found.items(), key=lambda pair: -len(pair[0])))


def _norm_words(text: str) -> set[str]:
    return {_norm(w) for w in _EN_WORD.findall(text)}


def subject_of(question: str, locale: str = "en-US", *, within: str | None = None) -> Subject:
    """The subject model of a question (or of a part: `within` is the whole question, whose specific
    terms a part without its own inherits, so "How fast are they being lost?" keeps "seagrass")."""
    terms: list[Term] = []
    foils: list[Term] = []  # what the subject is set beside ("than a gas boiler", 比油车): never its first term
    general: list[str] = []
    vocabulary: set[str] = set()
    run: list[tuple[str, str]] = []
    beside = False  # after "than", "vs", 比: the next run named is a foil
    before_mark: tuple[str, ...] = ()  # the common words named before the mark
    plain: tuple[str, ...] = ()  # the clause's first run of common words only ("heat pump")

    def close() -> None:
        nonlocal beside, plain
        if not run:
            return
        normed = tuple(_norm(w) for w, _ in run)
        # In reading order: the first specific word is the term's head (the "seagrass" of "seagrass
        # meadows", the 固态 of 固态电池量产), not necessarily the rarest.
        # An attribute noun is never the subject, however rare (产能, 利用率, "efficiency"): a page on pig
        # farms' 产能 is not about 光伏组件的产能.
        core = [(zipf(w, lang), _norm(w)) for w, lang in run
                if _wordlike(w) and zipf(w, lang) < SPECIFIC and not is_aspect(w)]
        # "vitamin D", "hepatitis B": a word and a capital letter name one thing, however common the word.
        named = [i - 1 for i, (w, _) in enumerate(run) if i and letter_name(w)]
        core = ([(0.0, f"{normed[i]} {run[i + 1][0].lower()}") for i in named]
                + [c for c in core if c[1] not in {normed[i] for i in named}])  # not "hepatitis" alone
        joiner = "" if all(lang == "zh" for _, lang in run) else " "
        rare = {w for _, w in core}
        last = max([*(i for i, n in enumerate(normed) if n in rare), *(i + 1 for i in named)], default=len(run) - 1)
        if joiner == "":
            last = len(run) - 1  # 城际铁路: a Chinese run is one compound
        while last + 1 < len(run) and run[last + 1][0].isdigit():
            last += 1  # "glp 1"
        text = joiner.join(w for w, _ in run[: last + 1])  # "seagrass meadows" of "seagrass meadows store"
        heads = [w for _, w in core]
        first = next((i for i, n in enumerate(normed) if heads and n == heads[0]), 0)
        if joiner == "" and first > 0:
            # A Chinese compound whose first words are common (海上 of 海上风电) is named only whole: 陆上风电
            # shares 风电, and the modifier is what tells the two apart.
            heads[0] = "".join(w for w, _ in run[: first + 1])
        if core:
            (foils if beside else terms).append(Term(text=text, words=normed, core=tuple(dict.fromkeys(heads))))
        else:
            general.extend(n for n in normed if _wordlike(n))
            plain = plain or tuple(n for n in normed if _wordlike(n))  # the clause's first: its subject
        beside = False
        run.clear()

    last_word = previous = ""  # the word before, for `en_verb_only`
    seq = clause_words(zh_plain(question))  # 会不会致癌 → 是否会致癌: the repeated verb names nothing
    for at, (word, lang) in enumerate(seq):
        last_word, previous, earlier = word, last_word, previous
        following = seq[at + 1][0] if at + 1 < len(seq) else ""
        if not word:
            close()  # a clause or list item ends ("排放，碳价" is two things, not one term 排放碳价)
            beside, plain = False, ()
            continue
        if lang == BESIDE_MARK or (lang == "en" and sets_beside(word, following)):
            # "Is a heat pump cheaper to run than a gas boiler": the heat pump is the subject, whatever the
            # words' rarity; a subject of common words before the mark is named as a compound.
            close()
            if not terms:
                before_mark = plain  # the subject, if it is named by common words only (see the end)
            beside = True
            continue
        if (lang == "zh" and run and following in ZH_YES_NO
                and {flag for _, flag in zh_tagged(word)} <= ZH_PREDICATE_TAGS):
            close()  # "国产猫粮靠谱吗": a yes/no question's predicate is said of the subject, no word of its name
            general.append(_norm(word))
            continue
        if lang == "zh" and beside and run and [flag for _, flag in zh_tagged(word)] in (["a"], ["v"], ["d"]):
            close()  # "比油车保养便宜": the thing set beside is named, what is said of both follows
            general.append(_norm(word))
            continue
        if lang == "en" and run and en_compared(word):
            close()  # "Is oat milk healthier": the comparative is said of the subject, no word of its name
            general.append(_norm(word))
            continue
        if lang == "zh" and run and _zh_predicate(run, word):
            general.append(_norm(run.pop()[0]))  # "疲劳驾驶引发的事故": 引发 says what 疲劳驾驶 does
        if (word.isdigit() or letter_name(word)) and run:
            run.append((word, lang))  # "GLP-1", "vitamin D": a number or a letter inside a name
            continue
        if not _wordlike(word):
            close()
            continue
        if _function_word(word, lang):
            close()
            if _wordlike(word) and word not in STOP_WORDS and word not in ZH_STOP_PHRASES:
                vocabulary.add(_norm(word))  # 中国, 发展: general, and never a competing subject
            continue
        if lang == "zh" and hedges_predicate(word, following):
            close()  # "电池一般能用几年": the hedge is said of the predicate; 一般纳税人 is a kind of taxpayer
            continue
        vocabulary.add(_norm(word))
        if (lang == "zh" and not run and (terms or foils) and previous in ZH_PREDICATE_OPENERS
                and (not following or _zh_grammar(following))
                and len(word) <= 2):  # (a longer run is a verb and its object, 喝啤酒: the object stays)
            # "布洛芬会伤胃吗", "二手房怎么过户", "开空调多少度最省电": a word that ends the clause after a modal, a how
            # or a degree word is what is said of the subject named before it, no second subject.
            general.append(_norm(word))
            continue
        if lang == "zh" and (zh_said_of(word, after_noun=bool(run)) or zh_asked_verb(word, previous, following)):
            # "糖税有用吗", "杀菌一般要吃多久", "怎么查看电池损耗": what is said or asked of the subject ends
            # its name and is none of it.
            close()
            general.append(_norm(word))
            continue
        if lang == "en" and run and run[-1][1] == "en" and en_verb_after(run[-1][0], word):
            # "Do speed cameras reduce crashes": the verb ends the subject's run and names nothing; a run
            # of common words before it is still the subject, as a compound (its object is not).
            before, found = tuple(_norm(w) for w, _ in run), len(terms)
            close()
            if len(terms) == found and len(before) >= 2:
                terms.append(_compound_term(before))
            general.append(_norm(word))
            continue
        if lang == "en" and previous.lower() == "to" and earlier.lower() == "how":
            close()  # "How to unclog a drain": the verb is what is done with the subject, whatever its rarity
            general.append(_norm(word))
            continue
        if lang == "en" and en_verb_only(word, previous):
            close()  # "install ripgrep": the verb is what is done with the subject, no word of it
            general.append(_norm(word))
            continue
        run.append((word, lang))
    close()
    if foils and not terms and before_mark:
        # "Is a heat pump cheaper to run than a gas boiler", "Is rice healthier than quinoa": the subject of
        # common words before the mark is named as a compound, never replaced by the foil.
        terms.append(_compound_term(before_mark) if not any(map(scripts.has_han, before_mark))
                     else Term(text="".join(before_mark), words=before_mark, core=("".join(before_mark),), common=True))
    terms += [f for f in foils if f.head not in {t.head for t in terms}]
    if not terms and within and within.strip() != question.strip():
        parent = subject_of(within, locale)
        terms = list(parent.terms)
        vocabulary |= parent.vocabulary
    if not terms:
        # A compound of common words ("heart attack", "term insurance") names a thing as surely as a rare
        # word does, as a compound: a page on a panic attack or on stroke is not about it.
        phrase = subject_phrase(question, locale)
        if len(phrase) >= 2 and not any(scripts.has_han(w) for w in phrase):
            terms = [_compound_term(phrase)]
    unique = {t.head: t for t in terms}  # "GLP-1 drugs" twice is one term
    names = synonyms.aliases(f"{question} {within or ''}") if not scripts.has_han(question) else ()
    return Subject(question=question, locale=locale, terms=tuple(unique.values()),
                   general=tuple(dict.fromkeys(general)), vocabulary=frozenset(vocabulary), aliases=names)


def _zh_predicate(run: list[tuple[str, str]], following: str) -> bool:
    """The run's last word is a verb said of the words before it, not part of their name: a verb (jieba's
    tag) right before a grammar word (的, 了, 吗, 哪些) with Chinese words before it. "疲劳驾驶引发的",
    "碳市场覆盖了", "还款划算吗", "量产面临哪些". A run of one verb is a noun in use (猝死的风险)."""
    if len(run) < 2 or run[-1][1] != "zh" or run[-2][1] != "zh":
        return False
    tags = zh_tagged(run[-1][0])
    # Not before a locative: a verb there is used as a noun ("扣除中", "集采之后", "比赛中").
    return (len(tags) == 1 and tags[0][1] == "v" and _zh_grammar(following)
            and "f" not in {flag for _, flag in zh_tagged(following)})


def _compound_term(phrase: tuple[str, ...]) -> Term:
    """A subject term of common words, named as a compound. A head this common is one that pages leave
    out where the words before it are no noun of their own ("solar" is solar power): they name the thing
    then. "Heart" is a thing of its own, so only "heart attack" names a heart attack, not "the heart stops"."""
    left_out = (len(phrase) >= 2 and zipf(phrase[-1], "en") >= COMMON_HEAD
                and not any(map(synonyms.is_noun, phrase[:-1])))
    return Term(text=" ".join(phrase), words=phrase, core=(compound(phrase[:-1] if left_out else phrase),),
                common=True)


def _rivals(subject: Subject, page: _Page, *, least: int) -> list[tuple[str, int]]:
    """Topical words of a page that are not the question's, most used first: what else it is about
    (地铁 of a page on 城市地铁 is a common word, 4.7, but a page that repeats it is about it)."""
    return [(w, n) for w, n in page.counts.most_common() if n >= least and w not in subject.vocabulary
            and _wordlike(w) and page.freq[w] < _TOPICAL and not _kin(subject, w)]


def _may_be_topic(word: str) -> bool:
    """Whether a word a page repeats can be what the page is about, in place of the subject: not a verb
    (接种, 安装: what is done with the thing; jieba's tag) nor people (adults, 老年人: whom it is for; WordNet's
    noun.person, `words.zh_people`). A page that says 接种 ten times and 流感疫苗 three is about getting the
    flu vaccine."""
    if scripts.has_han(word):
        tags = zh_tagged(word)
        if len(tags) == 1 and tags[0][1].startswith("v"):
            return False
        return not zh_people(word, tags[0][1])
    return not synonyms.is_person(word)


def _kin(subject: Subject, word: str) -> bool:
    """A word inside a subject word or around one (充电 of 充电桩, 风电场 of 风电): the same subject, not a rival."""
    return any(word in core or core in word for t in subject.terms for core in t.core)


def _named(term: Term, page: _Page) -> int:
    """How often a page names a term: its head as often as it is there, else its other specific words
    ("充电桩" names 电动汽车充电桩 on a page that says 新能源汽车), which count half."""
    head = page.hits(term.head)
    return head or (max((page.hits(w) for w in term.core[1:]), default=0) + 1) // 2


def _mentions(subject: Subject, page: _Page) -> tuple[int, Term | None]:
    """How often the most-named term of the subject is named, and that term."""
    best = max(subject.terms, key=lambda t: _named(t, page), default=None)
    return (_named(best, page), best) if best is not None else (0, None)


def _plain_mention(subject: Subject, text: str) -> bool:
    """Some sentence of the text names the subject by its first term's head and sets it beside nothing: no
    comparison word near that mention ("Chagas disease affects more than 6 million people" is plain; "Like
    Chagas disease, it …" and "Leishmaniasis and Chagas disease are both …" are not). (The head: "repository"
    of "restic backup repository" is said of borg's too.)"""
    return bool(subject.terms) and _plain_mention_of(subject.terms[0].head, text)


def page_about(subject: Subject, title: str, text: str) -> Verdict:
    """Whether a page is about the subject: its specific term is in the title or the lead, or named more
    often than any other specific word, never a passing mention (see the module doc)."""
    subject = subject.on_page(title, text)
    title, text = subject.read(title), subject.read(text)
    gate = scope_verdict(subject.question, subject.locale, title, text)
    if gate is not None:
        return gate  # another kind, thing or place than the question's (a near miss)
    if not subject.specific:
        return Verdict(True, "the question names no specific term")
    page = _page(title, text)
    named, term = _mentions(subject, page)
    if term is None or not named:
        return Verdict(False, f"never names {subject.describe()}", firm=False)
    main = subject.terms[0]
    if term is not main and not _named(main, page):
        # The question's first term is what it is about ("restic" of "set up a restic repository and back
        # up my home folder"); a page with only a later one ("home folder" with rsync) may be on another.
        return Verdict(False, f"names {term.text} but never {main.text}", firm=False)
    rivals = [(w, n) for w, n in _rivals(subject, page, least=2) if _may_be_topic(w)]
    rival, rival_count = rivals[0] if rivals else ("", 0)
    in_title = any(page.in_title(c) for t in subject.terms if _named(t, page) for c in t.core)
    rival_title = next((w for w in _rare_words(_before_comparison(title), RIVAL, subject.vocabulary)
                        if not _kin(subject, w)), "")
    if in_title and not rival_title:
        return Verdict(True, f"names {term.text} in its title")
    if rival_title and not in_title:
        # Unless its lead says the title's word is a name or a kind of the subject ("Myocardial
        # infarction, the medical name for … a heart attack").
        defined = _defined_word(subject, title, text)
        if defined:
            return Verdict(True, f"its lead says {defined} is {term.text}")
        rival_most = max(rival_count, page.hits(rival_title))
        if named >= 2 * rival_most:
            return Verdict(True, f"names {term.text} {named} times")
        # Named as often as the title's word or the page's most used: the title may name the subject's
        # setting ("Encrypted backups on Linux" for a restic walkthrough), not another subject.
        # A subject of common words only ("heart attack") is no match for a rare title word on rarity
        # alone ("Myocardial infarction in women"): never a firm verdict then.
        common = all(t.common for t in subject.terms)
        # A page that names the subject only beside its own topic ("Like the monarch butterfly, it …",
        # "低于抽水蓄能") is about another of its kind; one that says something of the subject itself ("the
        # first sign of Lyme disease", "根除幽门螺杆菌的首选方案") may be about an aspect of it: not a firm verdict.
        firm = named < rival_most and not common and not _plain_mention(subject, text)
        return Verdict(False, f"its title is about {rival_title}, not {term.text}", firm=firm)
    # Named up front and not outnumbered more than twice by another topic word: a page that names its
    # subject once and then says "they" is about it; "Unlike GLP-1 drugs, surgery …" is not.
    in_lead = any(page.in_lead(c) for t in subject.terms if _named(t, page) for c in t.core)
    if (in_title or in_lead) and 2 * named >= rival_count:
        return Verdict(True, f"names {term.text} in its {'title' if in_title else 'lead'}")
    if named >= 2 and 2 * named >= rival_count:
        return Verdict(True, f"names {term.text} {named} times")
    if rival:
        return Verdict(False, f"mostly about {rival} ({rival_count} times), {term.text} named {named} times",
                       firm=False)
    return Verdict(False, f"names {term.text} only in passing", firm=False)


def names_a_word(subject: Subject, title: str, text: str) -> bool:
    """The page uses a word of one of the subject's terms in some form (驾驶 of 疲劳驾驶, "term" of term life
    insurance), read through the subject's other names. A page with none of them is on another topic
    altogether, whatever general words of the question it shares (事故, 预防): it cannot be naming the
    subject otherwise. True for a question with no specific term."""
    if not subject.terms:
        return True
    subject = subject.on_page(title, text)
    page = _page(subject.read(title), subject.read(text))
    return any(page.names_family(word) for term in subject.terms for word in term.words)


def title_as_read(subject: Subject, title: str, text: str) -> str:
    """A page's title as the subject model reads it: other names put back to the question's words
    ("Recombinant zoster vaccine" → "… shingles vaccine") and, where the page's lead defines a title word
    as the subject ("Myocardial infarction, the medical name for … a heart attack"), the subject named."""
    subject = subject.on_page(title, text)
    read = subject.read(title)
    if _defined_word(subject, read, text, lead_title=title):
        read = f"{read} ({', '.join(t.text for t in subject.terms)})"
    return read


def _defined_word(subject: Subject, title: str, text: str, *, lead_title: str | None = None) -> str:
    """The title's rare word that the page's lead defines as the subject (definitions.lead_defines), or ''.
    `lead_title` is the title line the text opens with, where it is not `title` as given."""
    skip = title if lead_title is None else lead_title
    return next((w for w in _rare_words(title, RIVAL, subject.vocabulary)
                 if lead_defines(subject, text, w, title=skip)), "")


def names_subject(subject: Subject, text: str, context: str = "", *, title: str = "") -> bool:
    """The text names one of the subject's terms: its head, or another of its specific words where the
    context (the page) names the term too ("充电桩" on a page on 电动汽车充电桩)."""
    subject = subject.on_page(title, context)
    text, context, title = subject.read(text), subject.read(context), subject.read(title)
    own = _page("", text)
    whole = _page(title, context) if context or title else None
    return any(
        own.hits(t.head) > 0 or (any(own.hits(c) for c in t.core) and (whole is None or _named(t, whole) > 0))
        for t in subject.terms
    )


def sentence_about(subject: Subject, sentence: str, context: str = "", *, title: str = "") -> bool:
    """Whether a sentence is about the subject, in its context (the page or paragraph it comes from).

    On a page about the subject, a sentence is, unless it names a competing entity and not the subject
    ("Mangroves are lost at 1% a year" where the job's pages include one on mangroves: `competitors`);
    a rare word of the page's own topic ("defrost", 环评) is no competitor. On a page about something
    else, a sentence is only when it names the subject and no other rare word ("Unlike GLP-1 drugs,
    bariatric surgery …" is not). Without a context, a sentence must name the subject."""
    if not subject.specific:
        return True
    subject = subject.on_page(title, context)
    named = names_subject(subject, sentence, context, title=title)
    if not context and not title:
        return named
    rare = [w for w in _rare_words(subject.read(sentence), RIVAL, subject.vocabulary) if not _kin(subject, w)]
    if page_about(subject, title, context).about:
        return named or not any(w in subject.competitors for w in rare)
    return named and not rare


def with_competitors(subject: Subject, pages: Sequence[tuple[str, str]]) -> Subject:
    """The subject with the topics of the near-miss pages among `pages` (title, text) as its competitors:
    the rare words those pages are about (their title's and their most used), e.g. "mangrove" beside
    seagrass. A sentence on a page about the subject that names one of them, and not the subject, is
    about that competitor."""
    if not subject.specific:
        return subject
    found: set[str] = set()
    for title, text in pages:
        if not comparable(subject, f"{title} {text}") or page_about(subject, title, text).about:
            continue
        title, text = subject.read(title), subject.read(text)
        page = _page(title, text)
        found.update(w for w in _rare_words(title, RIVAL, subject.vocabulary) if not _kin(subject, w))
        found.update(w for w, _ in _rivals(subject, page, least=2)[:2] if page.freq[w] < RIVAL)
    return replace(subject, competitors=frozenset(found))


def claim_about(subject: Subject, claim: str, cited: Sequence[tuple[str, str]], passage: str = "") -> Verdict:
    """The claim check's relevance verdict for one cited sentence: `cited` are the (title, text) of
    the pages it cites and `passage` the best-matching passage of them. The claim is about the subject
    when, for one cited page, the claim is about it in that page's context and either the page is about
    the subject or the passage itself is ("Seagrass is lost at 1% a year [n]" citing a mangrove page
    whose passage speaks of mangroves is not)."""
    if not subject.specific:
        return Verdict(True, "the question names no specific term")
    reasons: list[str] = []
    for title, text in cited:
        page = page_about(subject, title, text)
        if not sentence_about(subject, claim, text, title=title):
            reasons.append(f"the sentence is not about {subject.describe()} ({page.why})")
            continue
        if page.about or (passage and sentence_about(subject, passage, text, title=title)):
            return Verdict(True, page.why)
        reasons.append(page.why)
    return Verdict(False, reasons[0] if reasons else "cites nothing")


def comparable(subject: Subject, text: str) -> bool:
    """A page in the question's script can be compared word for word (a Chinese question over an English
    page cannot: its subject words are not there in any spelling)."""
    return scripts.same_script(text[:3000], subject.locale)


def subject_note(question: str, locale: str, title: str, text: str) -> str:
    """A line for the model engine's researcher above a fetched page the subject model finds to be about
    another subject (empty otherwise): the model may still read it, and is told what to cite it for."""
    if not question.strip() or not comparable(subject := subject_of(question, locale), f"{title} {text}"):
        return ""
    verdict = page_about(subject, title, text)
    if verdict.about:
        return ""
    # Short: it rides on the page's share of the workspace, once per page the check doubts.
    if locale.lower().startswith("zh"):
        return f"*主题核查：可能不是“{subject.describe()}”（{verdict.why}），只引用其中关于该主题的内容。*\n"
    return f"*Subject check: may not be about {subject.describe()} ({verdict.why}); cite it only on that.*\n"
