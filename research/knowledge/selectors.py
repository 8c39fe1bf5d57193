"""Reads for knowledge bases. Every lookup is scoped to the user: someone else's object is a 404."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Avg, Count, QuerySet
from django.http import Http404

from research.knowledge.models import Chunk, Collection, Document, Posting
from research.knowledge.ranking import bm25_scores
from research.knowledge.text import tokenize


@dataclass(frozen=True)
class KBHit:
    document_id: int
    document_title: str
    chunk_id: int
    chunk_index: int
    text: str
    score: float
    url: str  # kb://<document_id>#chunk-<index>: stable, citable


def _is_anonymous(user: User | AnonymousUser | None) -> bool:
    return user is None or not user.is_authenticated


def collection_list_for_user(*, user: User | AnonymousUser) -> QuerySet[Collection]:
    if _is_anonymous(user):
        return Collection.objects.none()
    collections = Collection.objects.filter(owner_id=user.pk)
    return collections.annotate(document_count=Count("documents")).order_by("name", "id")


def collection_get_for_user(*, user: User | AnonymousUser, collection_id: int) -> Collection:
    if _is_anonymous(user):
        raise Http404("No such knowledge base.")
    collection = Collection.objects.filter(owner_id=user.pk, pk=collection_id).first()
    if collection is None:
        raise Http404("No such knowledge base.")
    return collection


def collection_get_by_name(*, user: User | AnonymousUser, name: str) -> Collection:
    if _is_anonymous(user):
        raise Http404("No such knowledge base.")
    collection = Collection.objects.filter(owner_id=user.pk, name=" ".join((name or "").split())).first()
    if collection is None:
        raise Http404("No such knowledge base.")
    return collection


def document_list(*, collection: Collection) -> QuerySet[Document]:
    # The full text can be megabytes; lists never need it.
    return Document.objects.filter(collection=collection).defer("text", "data").order_by("-created", "-id")


def document_statuses(*, collection: Collection) -> list[dict[str, object]]:
    """id, status, chunk count and failure reason of each document: what the collection page polls while indexing."""
    rows = Document.objects.filter(collection=collection).order_by("-created", "-id")
    return [{"id": pk, "status": status, "chunks": chunks, "error": error}
            for pk, status, chunks, error in rows.values_list("id", "status", "chunk_count", "error")]


def document_get_for_user(*, user: User | AnonymousUser, document_id: int) -> Document:
    if _is_anonymous(user):
        raise Http404("No such document.")
    documents = Document.objects.select_related("collection")
    document = documents.filter(collection__owner_id=user.pk, pk=document_id).first()
    if document is None:
        raise Http404("No such document.")
    return document


def kb_search(
    *,
    user: User | AnonymousUser,
    query: str,
    collection_ids: list[int] | None = None,
    limit: int = 5,
) -> list[KBHit]:
    """BM25 over the user's chunks (optionally only some of their collections), best first.

    Collection ids that are not the user's are ignored, never searched.
    """
    terms = sorted(set(tokenize(query or "")))
    if _is_anonymous(user) or not terms or limit <= 0:
        return []
    chunks = Chunk.objects.filter(document__collection__owner_id=user.pk)
    if collection_ids is not None:
        chunks = chunks.filter(document__collection_id__in=list(collection_ids))
    stats = chunks.aggregate(total=Count("id"), avg=Avg("length"))
    if not stats["total"]:
        return []

    postings = list(
        Posting.objects.filter(term__in=terms, chunk__in=chunks.values("id")).values_list(
            "chunk_id", "term", "tf", "chunk__length"
        )
    )
    lengths = {chunk_id: length for chunk_id, _, _, length in postings}
    scores = bm25_scores(
        query_terms=terms,
        postings=((chunk_id, term, tf) for chunk_id, term, tf, _ in postings),
        lengths=lengths,
        total_chunks=stats["total"],
        avg_length=float(stats["avg"] or 0.0),
    )
    # Ties go to the older chunk so results are stable between runs.
    best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
    rows = (
        Chunk.objects.filter(pk__in=[chunk_id for chunk_id, _ in best])
        .select_related("document")
        .only("id", "index", "text", "document__id", "document__title")
    )
    by_id = {chunk.pk: chunk for chunk in rows}
    hits: list[KBHit] = []
    for chunk_id, score in best:
        chunk = by_id[chunk_id]
        hits.append(
            KBHit(
                document_id=chunk.document.pk,
                document_title=chunk.document.title,
                chunk_id=chunk.pk,
                chunk_index=chunk.index,
                text=chunk.text,
                score=round(score, 6),
                url=chunk.kb_url,
            )
        )
    return hits
