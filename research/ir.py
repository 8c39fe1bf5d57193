"""Text retrieval shared by the knowledge base and the offline engine: one tokenizer, one BM25.

Pure Python, no Django. English words are lower-cased, stop words dropped and lightly stemmed;
CJK text has no spaces between words, so it is indexed as overlapping character bigrams (as
Lucene's CJK analyzer does), which needs no dictionary.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

from research import textre
from research.scripts import CJK as CJK_RANGES  # Han (incl. extension A and compatibility), kana and hangul

# One pass gives either a run of CJK characters or a run of other word characters.
# A word character (\\w: letter, digit, "_") that is not CJK: "letter and not CJK" is the class of
# what is neither a non-letter nor CJK (RE2 has no lookahead to subtract with).
WORD_NOT_CJK = f"(?:[^\\P{{L}}{CJK_RANGES}]|[^\\P{{N}}{CJK_RANGES}]|_)"
_TOKEN_RUN = textre.compile(f"([{CJK_RANGES}]+)|({WORD_NOT_CJK}+)")
_CJK_CHAR = textre.compile(f"[{CJK_RANGES}]")
MAX_TERM_LENGTH = 64

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else ever few
    for from further get gets got had has have having he her here hers herself him himself his how
    i if in into is it its itself just let like made make many may me might more most much must my
    myself no nor not now of off on once one only or other our ours ourselves out over own per please
    quite rather really same shall she should so some such than that the their theirs them themselves
    then there these they this those through thus to too under until up upon us use used using very
    via was we were what whatever when where whether which while who whom whose why will with within
    without would yet you your yours yourself yourselves
    tell explain describe give know want need think look help vs versus etc
    """.split()
)


def stem(word: str) -> str:
    """A light English stemmer: plural and common verb endings only, so it never mangles names."""
    if len(word) <= 3 or word.isdigit() or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4 and not word.endswith("eed"):  # speed, need: no past tense
        return word[:-2]
    if word.endswith(("ches", "shes", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str, *, chars: Collection[str] = ()) -> list[str]:
    """Index terms of `text`, in order: English words (stemmed, no stop words) and CJK bigrams.

    `chars` are one-character CJK terms a query asks for (the 赔 of 钱能赔多少): bigrams never hold one,
    so each is added once for every time the text has it (赔付 then holds 赔)."""
    terms: list[str] = []
    for cjk, word in _TOKEN_RUN.findall(unicodedata.normalize("NFKC", text).lower()):  # findall: no match objects
        if cjk:
            terms.extend([cjk] if len(cjk) == 1 else [cjk[i : i + 2] for i in range(len(cjk) - 1)])
        elif word:
            word = word.strip("_")
            if word and word not in STOP_WORDS and len(word) <= MAX_TERM_LENGTH:
                terms.append(stem(word))
    if chars:
        normal = unicodedata.normalize("NFKC", text)
        terms.extend(c for c in chars for _ in range(normal.count(c)))
    return terms


def single_chars(terms: Iterable[str]) -> frozenset[str]:
    """The one-character CJK terms among `terms` (a query's words that bigrams cannot match)."""
    return frozenset(t for t in terms if len(t) == 1 and _CJK_CHAR.fullmatch(t) is not None)


def idf(df: int, total: int) -> float:
    # The "+1" form (as in Lucene) stays positive for very common terms.
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def term_score(tf: int, term_idf: float, length: float, avg_length: float, k1: float, b: float) -> float:
    norm = k1 * (1 - b + b * length / avg_length) if avg_length > 0 else k1
    return term_idf * tf * (k1 + 1) / (tf + norm)


def bm25_scores(
    *,
    query_terms: Iterable[str],
    postings: Iterable[tuple[int, str, int]],
    lengths: Mapping[int, int],
    total_chunks: int,
    avg_length: float,
    k1: float = 1.2,
    b: float = 0.75,
) -> dict[int, float]:
    """Okapi BM25 over stored postings (chunk_id, term, tf), as the knowledge base keeps them.

    lengths: chunk_id -> number of terms; total_chunks and avg_length describe the whole searched
    scope (not only the matching chunks).
    """
    wanted = set(query_terms)
    by_term: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for chunk_id, term, tf in postings:
        if term in wanted:
            by_term[term].append((chunk_id, tf))
    avg = avg_length if avg_length > 0 else 1.0
    scores: dict[int, float] = defaultdict(float)
    for entries in by_term.values():
        term_idf = idf(len(entries), total_chunks)
        for chunk_id, tf in entries:
            scores[chunk_id] += term_score(tf, term_idf, lengths.get(chunk_id, avg), avg, k1, b)
    return dict(scores)


class BM25:
    """Okapi BM25 over pre-tokenized documents held in memory (the offline engine's sentences)."""

    def __init__(self, corpus: Sequence[Sequence[str]] = (), *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.fit(corpus)

    def fit(self, corpus: Sequence[Sequence[str]]) -> BM25:
        self.term_freqs: list[Counter[str]] = [Counter(doc) for doc in corpus]
        self.lengths: list[int] = [len(doc) for doc in corpus]
        self.avgdl: float = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0
        df: Counter[str] = Counter()
        for tf in self.term_freqs:
            df.update(tf.keys())
        self.idf: dict[str, float] = {t: idf(f, len(self.term_freqs)) for t, f in df.items()}
        return self

    def score(self, query_tokens: Sequence[str]) -> list[float]:
        terms = [t for t in dict.fromkeys(query_tokens) if t in self.idf]  # each query term counts once
        return [
            sum(term_score(tf[t], self.idf[t], length, self.avgdl, self.k1, self.b) for t in terms if tf.get(t))
            for tf, length in zip(self.term_freqs, self.lengths, strict=True)
        ]
