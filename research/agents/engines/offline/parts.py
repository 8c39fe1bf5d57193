"""The parts of a question that asks several things, split by meaning (issue 32, docs/offline-engine.md).

Each part is a complete question that names the subject, in the question's language:

- two clauses that each ask something are two parts, the subject carried into the second
  ("What does X cost, and what would make it cheaper?" → "What would make X cheaper";
  "数据中心的耗电量有多大，如何降低？" → "数据中心如何降低耗电量");
- a list of asked attributes of one subject is one part per attribute, each naming the subject
  ("What are the costs, risks and benefits of X?", "钠离子电池的成本和性能如何？");
- "and"/和 inside one phrase never splits: years, numbers, names and places, the objects of one preposition
  ("in 2021 and 2022", "the US and Canada", "2021年和2022年"), a comparison ("How does X compare with Y?",
  "X和Y相比如何"), the subject of a yes/no question ("Do retries and backoff help?"), anything inside a
  "when …"/"if …" clause.

When in doubt a question stays whole: one part that answers everything beats a fragment that asks nothing.
No part is ever cut between its subject and its verb. Plain functions, no model, no Django.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from research import textre
from research.agents.engines.offline.parts_zh import MAX_PARTS, _zh_parts
from research.agents.engines.offline.titles import SUBORDINATORS
from research.agents.text import STOPWORDS_EN, detect_locale, is_chinese, key_terms
from research.agents.types import PlanStep
from research.agents.words import (
    ASPECT_NOUNS_EN,
    SPECIFIC,
    _lemmas,
    aspect_kin,
    en_base_verb,
    en_classes,
    en_compared,
    en_participle_after,
    en_verb_after,
    en_verb_only,
    zipf,
)


@dataclass(frozen=True)
class Aspect:
    """One part of a question that asks several things ("… production and safety?")."""

    title: str  # the part as a complete question in the question's language, without its final "?"
    query: str  # its own key terms plus the subject's, for the step's search
    words: tuple[str, ...]  # the words that tell this part from the others
    kin: tuple[str, ...] = ()  # the same attribute in other words ("symptoms" for "signs": words.ASPECT_KIN)


# ---------------------------------------------------------------- English

_WH = frozenset("what how why which who whom whose when where".split())
_AUX = frozenset("do does did is are was were can could will would should shall may might must has have had".split())
_DO_AUX = _AUX - frozenset("is are was were".split())  # their subject is followed by a bare verb
_PREP = frozenset(
    "of in on at for from with across among amongst between during by over under into onto within without per "
    "versus vs vs. via about through throughout around near against beyond".split()
)
_COMPARE = frozenset("compare compares compared comparing comparison versus vs vs. differ differs difference "
                     "differences between than both either neither".split())
# Heads that name what is asked, not the subject: "the main obstacles to X" is about X.
# What a question asks of its subject (research.agents.words.ASPECT_NOUNS_EN) and the words that rank it
# ("the main obstacles to X"): a phrase ending in one names the subject after "of"/"to"/"for"/"on".
_ASKED_HEADS = ASPECT_NOUNS_EN | frozenset("main key biggest major latest current".split())
_PRONOUNS = frozenset(("it", "they", "them"))
_ASKERS = frozenset(("i", "we", "you"))  # "How do I …", "Can we …": the person asking, not the subject
_NOT_OBJECTS = frozenset("every each all some any more less or and".split())  # "to run every day", "to buy or lease"
# Adverbs said of the verb that follows them ("Do standing desks actually improve health"): a closed class.
_VERB_ADVERBS = frozenset("actually really truly ever also even usually generally typically still always never "
                          "just".split())
# Nouns of measure and container: "a shot of espresso" is about espresso, "a cup of coffee" about coffee.
_MEASURES = frozenset("cup cups glass glasses shot shots bottle bottles can cans slice slices piece pieces serving "
                      "servings spoonful teaspoon tablespoon pint pints gallon gallons litre liter bowl handful "
                      "bag bags box boxes pack packs".split())
_DETERMINERS = frozenset("the a an its their this these those my your our his her".split())
_POSSESSIVES = frozenset(("its", "their"))
_PLURALS = frozenset("people children men women data media criteria mice geese teeth feet".split())
_PARTICLES = frozenset("up down out off in on over back away".split())  # of a phrasal verb: "back up", "set up"
_TOKEN = textre.compile(r"\d[\d,.]*\d(?:-[^\s,;?!]+)?|[^\s,;?!]+|[,;?!]")  # "2,000", "49-euro"
_PUNCT = frozenset(",;?!")


def _is_stop(word: str) -> bool:
    return word.lower() in STOPWORDS_EN or word in _PUNCT


# A preposition before a question word opens a question too: "until what age …", "at what point …".
_PREP_WH = _PREP | frozenset("until till since after before to".split())


def _opens_question(tokens: list[str], i: int = 0) -> bool:
    """Tokens from i open a question: a question word or an auxiliary, or a preposition before a question
    word ("until what age should …")."""
    first = tokens[i].lower() if i < len(tokens) else ""
    return first in _WH | _AUX or (first in _PREP_WH and i + 1 < len(tokens) and tokens[i + 1].lower() in _WH)


def _up_to_mark(tokens: list[str], start: int) -> list[str]:
    """The tokens from start to the next clause mark: "and by how much?" asks nothing of its own."""
    end = next((k for k in range(start, len(tokens)) if tokens[k] in (",", ";", "?", "!")), len(tokens))
    return tokens[start:end]


def _asks(tokens: list[str]) -> bool:
    """A clause that asks something: opens a question (_opens_question) and has a topic word, or asks
    who, what, which, when or where of something with a verb of its own ("who should get it": every word a
    stop word, yet another question than the first). "by how much" and "why" alone ask nothing new."""
    start = 2 if tokens and tokens[0].lower() in _PREP_WH - _WH - _AUX else 1
    if not _opens_question(tokens):
        return False
    return (any(not _is_stop(t) for t in tokens[start:])
            or (tokens[0].lower() in _WH - {"how", "why"} and len(tokens) >= 3))


# A question word that asks of how much or how far, before the clause's auxiliary: "How much did X rise".
_HOW_DEGREE = frozenset("much far fast often long soon".split())


def _why_of(clause: list[str]) -> list[str] | None:
    """"…, and why?" asked of a clause: the clause with "why" for its question word ("How much did premiums
    rise in 2023" → "why did premiums rise in 2023"; "Is X better than Y" → "why is X better than Y"), or
    None where the question word is not followed by an auxiliary ("What drove inflation"): it stays whole."""
    words = [t for t in clause if t not in _PUNCT]
    low = [t.lower() for t in words]
    at = 0
    if low and low[0] == "how" and len(low) > 1 and low[1] in _HOW_DEGREE:
        at = 2
    elif low and low[0] in ("how", "when", "where"):
        at = 1
    if at >= len(low) or low[at] not in _AUX or len(words) - at < 3:
        return None
    return ["why", low[at], *words[at + 1 :]]


def _en_clauses(text: str) -> list[list[str]]:
    """The clauses of an English question, as tokens: at ";" and "?", and at ","/"and"/"but"/"or"
    before a question word or an auxiliary ("…, and what would…"). A piece that asks nothing
    ("In 2023, …") stays with its neighbour."""
    tokens = _TOKEN.findall(text)
    pieces: list[list[str]] = [[]]
    i = 0
    while i < len(tokens):
        tok, low = tokens[i], tokens[i].lower()
        if tok in (";", "?", "!"):
            pieces.append([])
        elif tok == "," or (low in ("and", "but", "or") and pieces[-1]):
            j = i + 1
            while j < len(tokens) and tokens[j].lower() in ("and", "but", "or"):
                j += 1
            nxt = tokens[j].lower() if j < len(tokens) else ""
            if nxt in _WH or (nxt in _AUX and low != ",") or (nxt in _PREP_WH and _asks(_up_to_mark(tokens, j))):
                pieces.append([])
                i = j
                continue
            pieces[-1].append(tok)
        else:
            pieces[-1].append(tok)
        i += 1
    clauses: list[list[str]] = []
    pending: list[str] = []
    for piece in (p for p in pieces if p):
        why = _why_of(clauses[-1]) if [t.lower() for t in piece] == ["why"] and clauses and not pending else None
        if why:
            clauses.append(why)  # "…, and why?": the same clause asked for its reasons, a part of its own
        elif _asks(piece):
            clauses.append([*pending, *([","] if pending else []), *piece])
            pending = []
        else:
            pending = [*pending, *([","] if pending else []), *piece]
    if pending:
        if clauses:
            clauses[-1] += [",", *pending]
        else:
            clauses.append(pending)
    return clauses


def _join(tokens: list[str]) -> str:
    out = ""
    for tok in tokens:
        out += tok if (tok in _PUNCT or not out) else f" {tok}"
    return out


def _aux_at(tokens: list[str]) -> int:
    """Where the auxiliary of an inverted question is ("How much does …" → 2), or -1."""
    if len(tokens) > 1 and tokens[0].lower() in ("which", "what", "whose") and not _is_stop(tokens[1]):
        return -1  # "Which companies are …", "What limits …": the question word's phrase is the subject
    for i, tok in enumerate(tokens[:4]):
        if tok.lower() in _AUX:
            return i
        if i and tok.lower() not in _WH and not tok.isalpha():
            break
    return -1


def _noun_phrase(tokens: list[str], start: int) -> tuple[list[str], int]:
    """The run of topic words from `start` (after determiners), and where it ends."""
    def verb(k: int) -> bool:
        return en_verb_only(tokens[k], tokens[k - 1] if k else "")

    while start < len(tokens) and (_is_stop(tokens[start]) or verb(start)):
        start += 1
    end = start
    # A word used only as a verb ends the phrase: "people bought Germany's ticket" is two phrases.
    while end < len(tokens) and not _is_stop(tokens[end]) and not verb(end):
        end += 1
    return tokens[start:end], end


def _main_verb(phrase: list[str], *, participle: bool = False) -> int:
    """Where the main verb stands in the words after "do"/"can"/"will" (0: not found; see
    research.agents.words.en_verb_after), or after "is/are" its participle (`en_participle_after`)."""
    test = en_participle_after if participle else en_verb_after
    return next((k for k in range(1, len(phrase)) if test(phrase[k - 1], phrase[k])), 0)


def _dummy_it(tokens: list[str], aux: int) -> int:
    """Where the object starts in "Is it safe to take X", "Is it worth buying X" (after the verb that follows
    the dummy "it", an adjective and "to"), or 0."""
    if aux < 0 or aux + 3 >= len(tokens) or tokens[aux + 1].lower() != "it":
        return 0
    if "ADJ" not in _lemmas(tokens[aux + 2].lower()):
        return 0
    at = 0
    if tokens[aux + 3].lower() == "to" and aux + 5 < len(tokens):
        at = aux + 5  # "to take X"
    elif tokens[aux + 3].lower().endswith("ing") and aux + 4 < len(tokens):
        at = aux + 4  # "worth buying X"
    # Only a noun phrase there: not "Is it okay to run every day", "Is it better to buy or lease a car".
    if not at or tokens[at].lower() in _NOT_OBJECTS:
        return 0
    phrase, _ = _noun_phrase(tokens, at)
    return at if any("NOUN" in _lemmas(w.lower()) or not _lemmas(w.lower()) for w in phrase) else 0  # (a name)


_HAPPENS = frozenset({"happens", "happened", "happen"})
_PARTICLES = frozenset("out up off down away back over".split())  # of a phrasal verb: "find out", "set up"


def _en_subject(tokens: list[str]) -> str:
    """The subject of the first clause: what a later "it"/"its" stands for."""
    aux = _aux_at(tokens)
    dummy = _dummy_it(tokens, aux)
    low = [t.lower() for t in tokens]
    if low[:2] == ["how", "to"] and len(tokens) > 3:
        # "How to unclog a drain without chemicals": the verb's object is the subject. A phrasal verb is one
        # verb: its particle ("find out", "set up") or its noun and "of" ("get rid of", "take care of").
        start = 5 if low[4:5] == ["of"] else 4 if low[3] in _PARTICLES else 3
        phrase, end = _noun_phrase(tokens, start)
    elif len(low) > 2 and low[0] == "what" and low[1] in _HAPPENS:
        # "What happens to your pension when you die": the object of "to"; "What happens if you miss a credit
        # card payment": the main clause names nothing, the condition's longest phrase is the subject.
        found = [_noun_phrase(tokens, k) for k in range(3 if low[2] == "to" else 2, len(tokens))]
        phrase, end = (found[0] if low[2] == "to" else max(reversed(found), key=lambda r: len(r[0]))) if found \
            else ([], -1)
    elif dummy:
        # "Is it safe to take ibuprofen with coffee": "it" stands for the infinitive's clause, whose object
        # is what is asked about, not "safe".
        phrase, end = _noun_phrase(tokens, dummy)
    elif aux >= 0 and aux + 2 < len(tokens) and tokens[aux + 1].lower() in _ASKERS:
        # "How do I install Flowq …": the asker is no subject; the object of the verb after it is.
        phrase, end = _noun_phrase(tokens, aux + 3)
    elif aux >= 0:
        phrase, end = _noun_phrase(tokens, aux + 1)
        # After "is" a participle: "Is the flu vaccine needed every year".
        verb = _main_verb(phrase, participle=tokens[aux].lower() not in _DO_AUX)
        # After "do" the clause has a verb: the phrase's last word where the clause ends with it ("What does
        # green hydrogen cost"), else only a word that can be a base-form verb ("Do automatic retries help":
        # "help" is a stop word, "retries" no verb). After "is": -ing/-ed ("Why are egg prices rising").
        last = phrase[-1] if phrase else ""
        closes = end >= len(tokens) or tokens[end] in _PUNCT
        verb_last = ((closes or en_base_verb(last)) if tokens[aux].lower() in _DO_AUX
                     else last.lower().endswith(("ing", "ed")))
        # After "is" a predicate adjective ends the phrase: "Is a heat pump worth it", "Is the flu vaccine safe".
        predicate = (tokens[aux].lower() not in _DO_AUX and len(phrase) >= 2 and not verb
                     and ((end < len(tokens) and tokens[end].lower() in ("it", "them"))
                          or (closes and next(iter(_lemmas(last.lower())), "") == "ADJ")))
        if predicate:
            phrase = phrase[:-1]
        elif verb:
            phrase = phrase[:verb]  # "Do speed cameras reduce crashes": the subject ends before its verb
        elif len(phrase) >= 2 and (verb_last or (end < len(tokens) and tokens[end].lower() == "than")):
            # "What does green hydrogen cost", "Why are egg prices rising", "Is HIIT better than …": not the
            # verb, nor the comparative.
            phrase = phrase[:-1]
    else:  # "What limits X …", "Which companies lead the X market": the longest run after the verb
        runs: list[tuple[list[str], int]] = []
        # The subject is in the main clause: not after "when"/"if" ("… prices when supply and demand shift").
        main = next((k for k, t in enumerate(tokens) if k and t.lower() in SUBORDINATORS), len(tokens))
        i = 1
        while i < main:
            run, end = _noun_phrase(tokens[:main], i)
            if run:
                runs.append((run[1:] if i == 1 and tokens[1] == run[0] and len(run) > 1 else run, end))
            i = max(end, i + 1)
        # The longest run, a later one on a tie; words before numbers ("inflation" before "2021").
        phrase, end = max(reversed(runs), key=lambda r: (any(w.isalpha() for w in r[0]), len(r[0]))) \
            if runs else ([], -1)
        first, first_end = _noun_phrase(tokens[:main], 1)
        if first and tokens[1] == first[0] and first_end < main and tokens[first_end].lower() in _AUX:
            # "Which heat pump is best for cold climates": the question word's phrase, then its verb, is
            # the subject, not the longest run after it.
            phrase, end = first, first_end
        if len(phrase) > 1 and end < len(tokens) and tokens[end].lower() in ("and", "or"):
            phrase = phrase[:-1]  # "X production and safety": the subject is X
    listed = 0 <= end < len(tokens) and tokens[end].lower() in (",", "and", "or")
    at_end = tokens.index(phrase[-1]) if phrase and phrase[-1] in tokens else -1
    measure = (at_end >= 0 and phrase[-1].lower() in _MEASURES
               and [t.lower() for t in tokens[at_end + 1 : at_end + 2]] == ["of"])
    # (A listed phrase that names a thing by a rare word is the subject itself: "Should I use ibuprofen or
    # paracetamol for a fever" is about the drugs, not the fever.)
    listed = listed and all(zipf(t, "en") >= SPECIFIC for t in phrase)
    if phrase and (phrase[-1].lower() in _ASKED_HEADS or listed or measure):
        # "What are the main obstacles to recycling X": the subject is the object of "to"/"of".
        at = next((k for k, t in enumerate(tokens) if t.lower() in ("of", "to", "for", "on", "between")
                   and k > tokens.index(phrase[-1])), -1)
        after, _ = _noun_phrase(tokens, at + 1) if at >= 0 else ([], 0)
        if after:
            phrase = after
    while len(phrase) > 1 and (phrase[-1].lower() in _VERB_ADVERBS or en_compared(phrase[-1])
                               or (phrase[-1].lower().endswith("ly") and en_classes(phrase[-1]) == {"ADV"})):
        # "Do standing desks actually improve health", "How to lower cholesterol naturally": the adverb is said
        # of the verb; "Is a heat pump cheaper to run": the comparative is said of the subject.
        phrase = phrase[:-1]
    if phrase and all(en_compared(t) for t in phrase):
        return ""  # "Which is cheaper to run, X or Y": a comparative is no subject (the sides are the terms)
    return " ".join(t for t in phrase if t not in _PUNCT)


def _carry(tokens: list[str], subject: str, subject_terms: set[str], recent: str) -> list[str]:
    """A later clause with the subject named: "what would make it cheaper" → "… make X cheaper".
    "it"/"its" stand for the most recent subject, and a clause that names none of the question's
    subject gets it added."""
    if not subject:
        return tokens
    possessive = recent + ("'" if recent.endswith("s") else "'s")
    # "they", "them", "their" stand for a plural only: in "did the ticket get them out of their cars" they
    # are the people who bought it, not the ticket.
    last = recent.split()[-1].lower() if recent.split() else ""
    plural = (last.endswith("s") and not last.endswith("ss")) or last in _PLURALS
    out: list[str] = []
    for k, tok in enumerate(tokens):
        low = tok.lower()
        # "one" ends a clause as a pronoun ("until what age should a child use one": a child seat), and
        # after "which" ("which one is cheapest").
        before = tokens[k - 1].lower() if k else ""
        # And after a determiner and an adjective: "how much does a new one cost" (a new car battery).
        after = tokens[k + 1] if k + 1 < len(tokens) else ""
        described = (k >= 2 and tokens[k - 2].lower() in ("a", "an", "the") and "ADJ" in _lemmas(before)
                     and (not after or after in _PUNCT or "VERB" in _lemmas(after.lower())))  # not "one bedroom"
        final = k == len(tokens) - 1 and k > 0 and before not in _WH | {"the", "a", "each", "every", "no"}
        pronoun = (low == "it" or (low in _PRONOUNS and plural)
                   or (low == "one" and (before == "which" or described or final)))
        owner = low == "its" or (low in _POSSESSIVES and plural)
        out.append(recent if pronoun else possessive if owner else tok)
    if not subject_terms & {w.lower().removesuffix("'s").rstrip("'") for t in out for w in t.split()}:
        # "and who leads?" → "who leads for X"; a clause ending with its preposition takes "with X"
        # ("what should I watch for" → "what should I watch for with X", never "for for X").
        stranded = bool(out) and out[-1].lower() in _PREP
        out += ["with" if stranded else "for", *subject.split()]
    return out


def _left_run(tokens: list[str], k: int) -> tuple[int, int]:
    """The run of topic words that ends just before index k: (start, k)."""
    start = k
    while start > 0 and not _is_stop(tokens[start - 1]):
        start -= 1
    return start, k


def _en_list(tokens: list[str]) -> list[list[str]] | None:
    """One clause per asked attribute ("the costs, risks and benefits of X"), or None to keep it whole."""
    lows = [t.lower() for t in tokens]
    if _COMPARE & set(lows):
        return None  # a comparison is one part: both sides belong in one answer
    for k, low in enumerate(lows):
        if low not in ("and", "or") or k == 0:
            continue
        if SUBORDINATORS & set(lows[1:k]):
            return None  # "… when A and B disagree": the "and" is inside a clause
        # The right item: topic words up to a preposition, a stopword or the end.
        r_end = k + 1
        while r_end < len(tokens) and not _is_stop(tokens[r_end]):
            r_end += 1
        right = tokens[k + 1 : r_end]
        if not 1 <= len(right) <= 3:
            continue
        obj = r_end + 1 if r_end + 1 < len(tokens) and lows[r_end] in _PARTICLES else r_end
        if obj < len(tokens) and lows[obj] in _DETERMINERS:
            # "install X and configure the broker", "set up X and back up my folder": two verbs (a particle
            # may follow one) with their objects, one task.
            return None
        aux = _aux_at(tokens)
        # The left items: comma-separated runs back from the "and" ("costs , risks and").
        items: list[tuple[int, int]] = []
        start, end = _left_run(tokens, k - (1 if tokens[k - 1] == "," else 0))
        items.append((start, end))
        while start >= 2 and tokens[start - 1] == ",":
            s, e = _left_run(tokens, start - 1)
            if s == e:
                break
            items.append((s, e))
            start = s
        first_start, first_end = items[-1]
        run_len = first_end - first_start
        inverted_end = aux >= 0 and r_end == len(tokens) and aux < first_start
        if inverted_end and tokens[first_start - 1].lower() != "to" and run_len <= len(right) + 1:
            return None  # "Do automatic retries and backoff help?": the last word is the verb
        after_det = first_start > 0 and lows[first_start - 1] in ("the", "a", "an")
        if len(items) == 1:
            if run_len < len(right) or (run_len == len(right) and first_start > 0 and not after_det
                                        and lows[first_start - 1] != "to"):
                return None  # nothing left for the verb: the coordination is the clause's subject
            if not (after_det and run_len <= 3):  # "the side effects and costs": the whole noun phrase
                items = [(first_end - len(right), first_end)]
        else:  # the first item of a list is as long as the next one ("X production, cost and safety")
            nxt = items[-2][1] - items[-2][0]
            items[-1] = (max(first_start, first_end - nxt), first_end)
        items.reverse()
        head_end = items[0][0]
        if head_end == 0:
            return None  # "costs, risks and benefits of X": no words that ask, so no question to share
        if lows[head_end - 1] in _PREP:
            return None  # "in 2021 and 2022", "for lithium and cobalt": one scope
        words = [*[tokens[s:e] for s, e in items], right]
        if any(any(c.isdigit() for c in w) or w[:1].isupper() for item in words for w in item):
            return None  # years, numbers, names and places stay together
        head, tail = tokens[:head_end], tokens[r_end:]
        return [[*head, *item, *tail] for item in words]
    return None


# The sides of a topic set before a colon: "Artificial turf vs natural grass".
_SIDES = textre.compile(r"\s+(?:vs\.?|versus)\s+", textre.I)
_COMMON_ZIPF = 3.0  # a dictionary word this common is no name: "Artificial" of "Artificial turf"


def _as_inner(phrase: str) -> str:
    """A phrase moved inside a sentence: its first word lower-cased where it is a common word ("Artificial
    turf" → "artificial turf"), not a name ("Lyme disease", "HIIT")."""
    first, _, rest = phrase.partition(" ")
    common = first[1:].islower() and bool(en_classes(first)) and zipf(first.lower(), "en") >= _COMMON_ZIPF
    return f"{first.lower() if common else first}{' ' if rest else ''}{rest}"


def _topic_first(text: str) -> tuple[list[list[str]], str, bool] | None:
    """A question led by its topic and a colon ("Artificial turf vs natural grass: which causes fewer
    injuries, and which is cheaper?", "Lyme disease: how common is it, and how is it treated?"): the clauses
    after the colon, each naming the topic (both sides of a comparison after a colon of its own: "which
    causes fewer injuries: artificial turf or natural grass"; a single topic for the pronouns that stand for
    it), the topic's first side (the subject), and whether it compares two. None where the text is no such
    question, or where a single topic stands for nothing after it ("Quick question: how much does a heat
    pump cost")."""
    topic, colon, rest = text.partition(":")
    topic, rest = topic.strip(), rest.strip()
    if not colon or not rest or not 1 <= len(topic.split()) <= 8:
        return None
    if _opens_question(_TOKEN.findall(topic)) or not _opens_question(_TOKEN.findall(rest)):
        return None
    clauses = _en_clauses(rest)
    sides = [_as_inner(side.strip()) for side in _SIDES.split(topic) if side.strip()]
    if len(sides) == 2:
        return [[*c[:-1], f"{c[-1]}:", sides[0], "or", sides[1]] for c in clauses if c], sides[0], True
    topic = _as_inner(topic)
    if not any(t.lower() in _PRONOUNS | _POSSESSIVES for c in clauses for t in c):
        return None
    terms = {t.lower() for t in key_terms(topic, "en-US", fallback=False)}
    return [_carry(c, topic, terms, topic) for c in clauses], topic, False


def _en_parts(text: str) -> tuple[list[tuple[str, str]], str]:
    """(part, the words that tell it apart) for each part, and the subject."""
    led = _topic_first(text)
    compared = False
    if led is not None:
        whole, subject, compared = led
        subject_terms = {t.lower() for t in key_terms(subject, "en-US", fallback=False)}
    else:
        clauses = _en_clauses(text)
        if not clauses:
            return [], ""
        subject = _en_subject(clauses[0])
        subject_terms = {t.lower() for t in key_terms(subject, "en-US", fallback=False)}
        whole = [clauses[0]]
        recent = subject
        for clause in clauses[1:]:
            whole.append(_carry(clause, subject, subject_terms, recent))
            own = _en_subject(clause)
            if own and not {w.lower() for w in own.split()} & (_PRONOUNS | _POSSESSIVES):
                recent = own  # "How do heat pumps work, and what do they cost?": "they" are the heat pumps
    parts: list[tuple[str, str]] = []
    for clause in whole:
        queue = [clause]
        while queue and len(parts) < MAX_PARTS:
            current = queue.pop(0)
            split = None if compared else _en_list(current)  # "…: artificial turf or natural grass" is one
            if split and len(split) > 1:
                queue = split + queue
                continue
            parts.append((_join(current).strip(" ,"), ""))
    # What each part alone asks: its terms that not every part shares ("production" | "safety").
    terms = [key_terms(p, "en-US", fallback=False) for p, _ in parts]
    common = set.intersection(*({t.lower() for t in ts} for ts in terms)) if terms else set()
    parts = [(p, " ".join(t for t in ts if t.lower() not in common)
              or " ".join(t for t in ts if t.lower() not in subject_terms))
             for (p, _), ts in zip(parts, terms, strict=True)]
    # A "why" part shares every word with the clause it was asked of: what tells it apart is that it asks
    # for reasons (their kin, words.ASPECT_KIN, are the words a cause is stated in: because, due, driven).
    parts = [(p, f"reasons {own}".strip() if p.lower().startswith("why ") else own) for p, own in parts]
    return parts, subject


# ---------------------------------------------------------------- both


def question_aspects(question: str, locale: str) -> list[Aspect]:
    """The parts of a question that asks several things; [] for a one-part question (the planner
    then uses the question's facets). See the module's docstring for what splits and what does not."""
    text = " ".join(question.split()).strip().rstrip("?？!！.。 ")
    if not text:
        return []
    zh = is_chinese(locale) or detect_locale(text) == "zh-CN"
    # English rules read ASCII punctuation: NFKC makes "？" "?" and "，" ",".
    parts, subject = _zh_parts(text) if zh else _en_parts(unicodedata.normalize("NFKC", text))
    unique: dict[str, tuple[str, str]] = {}
    for part, own in parts:
        if any(c.isalnum() for c in part):
            unique.setdefault(part.lower(), (part, own))  # a part said twice is one part
    parts = list(unique.values())
    if len(parts) < 2:
        return []
    lang = "zh-CN" if zh else "en-US"
    subject_terms = key_terms(subject, lang, fallback=False) if subject else key_terms(question, lang)
    out: list[Aspect] = []
    queries: set[str] = set()
    for title, own in parts:
        title = title[:1].upper() + title[1:]
        words = tuple(own.split()) or tuple(key_terms(title, lang, fallback=False)) or (title,)
        # Chinese key terms are runs between question words ("成本与锂电池相比"): the part's own words
        # and the subject make the better query there; English adds the part's other words.
        title_terms = [] if zh else key_terms(title, lang, fallback=False)
        mine = {t.lower() for t in [*own.split(), *title_terms]}
        siblings = {w.lower() for _, o in parts if o != own for w in o.split()} - mine
        terms = [t for t in [*own.split(), *subject_terms, *title_terms] if t.lower() not in siblings]
        query = " ".join(dict.fromkeys(terms))
        if query.lower() in queries:  # siblings never search the same words
            query = f"{query} {title}"
        queries.add(query.lower())
        # "How well does it work" asks how effective it is: the degree word leads to its group (words.py).
        degree = textre.findall(r"\bhow\s+(\w+)", title.lower())
        kin = tuple(dict.fromkeys(k for w in (*words, *degree) for k in aspect_kin(w) if k not in words))
        out.append(Aspect(title[:200], query[:400], words, kin))
    return out


def _aspect_of(question: str, locale: str, step: PlanStep) -> Aspect | None:
    """The part of the question a step researches (its title is the part's), or None."""
    return next((a for a in question_aspects(question, locale) if a.title == step.title), None)
