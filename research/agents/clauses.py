"""A question's words as the subject model (research/agents/subject.py) reads them: clause and list ends,
Chinese comparison marks (比), capital letters that name a kind ("vitamin D"), and the words that open what
a question says of its subject (modals, how-words, degree words) rather than name it."""

from __future__ import annotations

from research import scripts, textre
from research.agents.words import (
    _ZH_MODALS,
    ZH_HOW,
    ZH_PREDICATE_TAGS,
    _raw_words,
    zh_unglued,
    zipf,
)
from research.agents.zhtag import zh_beside_pieces, zh_dictionary_count, zh_tagged

_CLAUSE_MARK = textre.compile(r"[，,；;？?！!。、：:]")


# What opens a Chinese predicate: modals (会, 可以), how-words (怎么), degree words (最, 更), which (哪个划算):
# closed classes.
ZH_PREDICATE_OPENERS = frozenset({*_ZH_MODALS, *ZH_HOW, "最", "更", "很", "太", "比较", "是否", "能否",
                                   "哪个", "哪种"})


def letter_name(word: str) -> bool:
    """A capital letter that names a kind after a word ("vitamin D", "hepatitis B", "plan B")."""
    return len(word) == 1 and "A" <= word <= "Z" and word != "I"


ZH_YES_NO = ("吗", "呢", "么")
_KNOWN = 3.0  # Zipf: a word this common is one of the language's own, not the segmenter's glue (靠谱 3.5)
BESIDE_MARK = "beside"  # the "language" of a Chinese comparison mark (比) among a clause's words
# What sets the subject beside another thing in a question: "than", "vs", "compared with/to".
_BESIDE_WORDS = frozenset({"than", "versus", "vs", "vs."})


def sets_beside(word: str, following: str) -> bool:
    """The word sets the subject beside another thing: "than", "vs", "compared" before "to" or "with"."""
    low = word.lower()
    return low in _BESIDE_WORDS or (low == "compared" and following.lower() in ("to", "with"))


def clause_words(text: str) -> list[tuple[str, str]]:
    """The text's words (see words._raw_words), with ("", "") where punctuation ends a clause or item and
    ("比", BESIDE_MARK) where a Chinese clause sets one thing beside another (zhtag.zh_comparison_marks)."""
    out: list[tuple[str, str]] = []
    for clause in _CLAUSE_MARK.split(text):
        for i, piece in enumerate(zh_beside_pieces(clause) if scripts.has_han(clause) else [clause]):
            if i:
                out.append(("比", BESIDE_MARK))
            found = [(part, lang) for word, lang in _raw_words(piece)
                     for part in (zh_unglued(word) if lang == "zh" else [word])]
            for k, (word, lang) in enumerate(found):
                following = found[k + 1][0] if k + 1 < len(found) else ""
                if lang == "en" and k and _written_capital(piece, found[k - 1][0], word):
                    word = word.upper()  # (the segmenter lowers it: "vitamin D" names a thing, "a" does not)
                out.extend((w, lang) for w in (_predicate_cut(word) if following in ZH_YES_NO else [word]))
        out.append(("", ""))
    return out


def _written_capital(text: str, before: str, letter: str) -> bool:
    """The one-letter word is written as a capital right after the word before it ("vitamin D", not "a")."""
    if len(letter) != 1 or not letter.isalpha() or not before.isalnum():
        return False
    return textre.search(rf"(?i:\b{textre.escape(before)})\s+{letter.upper()}\b", text) is not None


def _predicate_cut(word: str) -> list[str]:
    """A Chinese word the segmenter glued to the predicate of a yes/no question (猫粮靠谱 + 吗), as the two:
    only where jieba's dictionary lacks the whole and a word list knows the tail, an adjective or a verb."""
    if not scripts.has_han(word) or len(word) < 3 or zh_dictionary_count(word):
        return [word]
    for k in range(2, len(word) - 1):  # (a head of one character is a piece of a name: 比亚 + 迪靠谱)
        tail = word[k:]
        if ((zh_dictionary_count(tail) or zipf(tail, "zh") >= _KNOWN) and zipf(word[:k], "zh") >= _KNOWN
                and {flag for _, flag in zh_tagged(tail)} <= ZH_PREDICATE_TAGS):
            return [word[:k], tail]
    return [word]
