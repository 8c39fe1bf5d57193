"""A page's lead that defines its own title word as the question's subject.

Pages name their subject as their field does: "Myocardial infarction in women" is about heart attacks,
and it says so in its first sentence ("Myocardial infarction, the medical name for what most people
call a heart attack, …"); "A STEMI … is the kind of heart attack in which …". Encyclopaedia-style leads
define their term this way. A title word rarer than the subject's is otherwise read as another subject.

`lead_defines(subject, lead, word)` holds where one sentence of the lead joins the word and a term of the
subject with a defining phrase (a name for, known as, called, 即, 俗称; with the word first also a kind
of, is a, 是一种) and nothing between them compares or denies ("is not a heart attack", "can feel like a
heart attack", "不同于"). A page that only says its thing resembles the subject, or is not it, stays a page
on another thing; and a subject said to be a kind of the page's thing ("a heart attack is one kind of
cardiovascular event") does not make a page on the wider thing one on the subject.
"""

from __future__ import annotations

from typing import Protocol

from research import scripts, textre
from research.agents.words import _norm
from research.report.sentences import sentence_bounds


class _Term(Protocol):
    @property
    def core(self) -> tuple[str, ...]: ...


class _Subject(Protocol):
    """What this module reads of research.agents.subject.Subject (not imported: subject.py imports us)."""

    @property
    def terms(self) -> tuple[_Term, ...]: ...

_CLAUSE_END = textre.compile(r"[;:；：]")
_EN_TOKEN = textre.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")

# Either order: another name of the same thing.
_EN_ALIAS = textre.compile(
    r"\b(?:names?|terms?|words?) for\b|\b(?:known|referred to|described|diagnosed)\s+(?:\w+\s+){0,3}as\b"
    r"|\bcalled\b|\bcall\b|\bi\.e\.|\bthat is\b|\(\s*$|^\s*,?\s*\(", textre.IGNORECASE)
# The page's word first: a kind of the subject ("a STEMI is the kind of heart attack").
_EN_KIND = textre.compile(
    r"\b(?:is|are|was|were)\s+(?:a|an|the|one)\s+(?:\w+\s+){0,2}(?:kind|type|form|sort|variety|subtype|class)s?"
    r"\s+of\s+(?:\w+\s+)?$|\b(?:is|are)\s+(?:a|an)\s+(?:\w+\s+)?$", textre.IGNORECASE)
_EN_DENIES = textre.compile(
    r"n't\b|\b(?:not|never|no|unlike|like|than|versus|vs|rather|confused|mistaken|differs?|different|instead|"
    r"without|resembles?|mimics?)\b|\bor\s+(?:an?\s+|the\s+)?$", textre.IGNORECASE)

_ZH_ALIAS = textre.compile(r"即|又称|又叫|俗称|也叫|也称|简称|就是|称为|叫做|[（(]\s*$|^\s*[（(]")
_ZH_KIND = textre.compile(r"是一种|是指|指的是|是.{0,6}的一种")
_ZH_DENIES = textre.compile(r"不是|并非|并不|不同于|不等于|区别|区分|像|类似|而非|误|还是|或者|与其")

_LEAD_SENTENCES = 2
_MOST_BETWEEN = 14  # words (or, in Chinese, characters / 2) between the page's word and the subject


def _lead_sentences(lead: str, title: str) -> list[str]:
    """The first sentences of the page's first paragraph after its title (a page's text, as fetched,
    often opens with its title line or a Markdown heading)."""
    own = " ".join(title.split()).lower()
    first = next((p.strip() for p in lead.split("\n") if p.strip() and not p.lstrip().startswith("#")
                  and " ".join(p.split()).lower() != own), "")
    return [first[a:b] for a, b in sentence_bounds(first)][:_LEAD_SENTENCES]


def _en_spans(sentence: str, name: str) -> list[tuple[int, int]]:
    """Where the sentence names `name` (normalised words, "heart attack"), as character spans."""
    want = name.split(" ")
    tokens = [(m.start(), m.end(), _norm(m.group(0).lower())) for m in _EN_TOKEN.finditer(sentence)]
    return [(tokens[i][0], tokens[i + len(want) - 1][1]) for i in range(len(tokens) - len(want) + 1)
            if [t[2] for t in tokens[i : i + len(want)]] == want]


def _spans(sentence: str, name: str) -> list[tuple[int, int]]:
    if scripts.has_han(name):
        return [(m.start(), m.end()) for m in textre.finditer(textre.escape(name), sentence)]
    return _en_spans(sentence, name)


def _joins(between: str, *, word_first: bool, zh: bool) -> bool:
    if _CLAUSE_END.search(between):
        return False
    size = len(between) / 2 if zh else len(_EN_TOKEN.findall(between))
    if size > _MOST_BETWEEN:
        return False
    denies, alias, kind = (_ZH_DENIES, _ZH_ALIAS, _ZH_KIND) if zh else (_EN_DENIES, _EN_ALIAS, _EN_KIND)
    if denies.search(between):
        return False
    return bool(alias.search(between) or (word_first and kind.search(between)))


def lead_defines(subject: _Subject, lead: str, word: str, *, title: str = "") -> bool:
    """One of the lead's first sentences says the page's `word` (normalised, as the subject model reads
    words) is a name or a kind of a term of the subject (see the module doc). `lead` is the page's text
    from its start; `title` is skipped where the text repeats it first."""
    names = [core for term in subject.terms for core in term.core]
    if not word or not names:
        return False
    for sentence in _lead_sentences(lead, title):
        zh = scripts.has_han(sentence)
        own = _spans(sentence, word)
        for name in names:
            for s_start, s_end in _spans(sentence, name):
                for w_start, w_end in own:
                    if w_end <= s_start and _joins(sentence[w_end:s_start], word_first=True, zh=zh):
                        return True
                    if s_end <= w_start and _joins(sentence[s_end:w_start], word_first=False, zh=zh):
                        return True
    return False
