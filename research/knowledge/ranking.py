"""BM25 for the knowledge base: the shared implementation in research.ir (the same arithmetic on any database)."""

from research.ir import bm25_scores

__all__ = ["bm25_scores"]
