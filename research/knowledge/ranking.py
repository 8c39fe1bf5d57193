"""Okapi BM25 over precomputed term frequencies.

Kept free of Django so it is the same arithmetic on SQLite and PostgreSQL: the
database only hands back postings (chunk, term, tf) for the query's terms.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

K1 = 1.2
B = 0.75


def bm25_scores(
    *,
    query_terms: Iterable[str],
    postings: Iterable[tuple[int, str, int]],
    lengths: Mapping[int, int],
    total_chunks: int,
    avg_length: float,
    k1: float = K1,
    b: float = B,
) -> dict[int, float]:
    """Score chunks for a query.

    postings: (chunk_id, term, tf) for every chunk in scope that holds a query term;
    lengths: chunk_id -> number of terms in that chunk; total_chunks and avg_length
    describe the whole searched scope (not only the matching chunks).
    """
    wanted = set(query_terms)
    by_term: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for chunk_id, term, tf in postings:
        if term in wanted:
            by_term[term].append((chunk_id, tf))
    avg = avg_length if avg_length > 0 else 1.0
    scores: dict[int, float] = defaultdict(float)
    for entries in by_term.values():
        df = len(entries)
        # The "+1" form of IDF (as in Lucene) stays positive for very common terms.
        idf = math.log(1 + (total_chunks - df + 0.5) / (df + 0.5))
        for chunk_id, tf in entries:
            norm = k1 * (1 - b + b * lengths.get(chunk_id, avg) / avg)
            scores[chunk_id] += idf * tf * (k1 + 1) / (tf + norm)
    return dict(scores)
