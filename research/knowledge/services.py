"""Writes for knowledge bases. Callers pass objects they already scoped to the user (see selectors)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from research.jobs.dispatch import enqueue_document_index
from research.jobs.fairness import owner_lock
from research.knowledge.extract import CONTENT_TYPES, DocumentRejected, clean_filename, extract_document, precheck
from research.knowledge.models import Chunk, Collection, Document, DocumentStatus, Posting
from research.knowledge.text import chunk_text, term_frequencies
from research.ratelimit import sliding_window_hit

logger = logging.getLogger(__name__)


def collection_create(*, owner: User, name: str, description: str = "") -> Collection:
    """Create a collection; raises ValidationError for a blank or already-used name."""
    collection = Collection(owner=owner, name=" ".join((name or "").split()), description=(description or "").strip())
    # full_clean checks the (owner, name) constraint too, so the error is a form-friendly ValidationError.
    collection.full_clean()
    try:
        with transaction.atomic():
            collection.save()
    except IntegrityError:  # lost a race with an identical create
        raise ValidationError({"name": _("You already have a knowledge base with this name.")}) from None
    return collection


def collection_get_or_create(*, owner: User, name: str) -> tuple[Collection, bool]:
    clean = " ".join((name or "").split())
    existing = Collection.objects.filter(owner=owner, name=clean).first()
    if existing is not None:
        return existing, False
    return collection_create(owner=owner, name=clean), True


def collection_delete(*, collection: Collection) -> None:
    # Documents, chunks and postings go with it (CASCADE).
    collection.delete()


def document_add_or_get(
    *, collection: Collection, filename: str, data: bytes, content_type: str = ""
) -> tuple[Document, bool]:
    """Validate, extract, chunk and index one file in this process; (document, created).

    For the `kb add` command and tests; web uploads use document_submit (indexed by a worker). The same
    caps apply (extract.py). The same bytes already in the collection are not indexed twice: the existing
    document comes back with created=False (a copy that failed before is replaced). Raises
    DocumentRejected for files we refuse. Everything is written in one transaction, so a failure leaves nothing.
    """
    sha256 = hashlib.sha256(data).hexdigest()
    existing = Document.objects.filter(collection=collection, sha256=sha256).first()
    if existing is not None:
        if existing.status != DocumentStatus.FAILED:
            return existing, False
        existing.delete()

    filename = clean_filename(filename)
    extracted = extract_document(filename=filename, data=data, content_type=content_type)
    pieces = chunk_text(extracted.text)
    try:
        with transaction.atomic():
            document = Document.objects.create(
                collection=collection,
                title=extracted.title,
                filename=filename,
                content_type=extracted.content_type,
                size=len(data),
                sha256=sha256,
                text=extracted.text,
                chunk_count=len(pieces),
            )
            _index_chunks(document=document, pieces=pieces)
    except IntegrityError:
        # Another request added the same file between our check and insert.
        existing = Document.objects.filter(collection=collection, sha256=sha256).first()
        if existing is None:
            raise
        return existing, False
    logger.info("kb: indexed document %s (%s chunks) in collection %s", document.pk, len(pieces), collection.pk)
    return document, True


def document_submit(
    *, collection: Collection, filename: str, data: bytes, content_type: str = ""
) -> tuple[Document, bool]:
    """Accept an upload at once and index it in a worker; (document, created).

    Only the cheap checks run here (type, size, empty, PDF header; DocumentRejected). The document starts
    `indexing` and ends `ready` or `failed` with a reason (document_index). The same bytes already in the
    collection come back with created=False; a copy that failed before is queued again.
    """
    sha256 = hashlib.sha256(data).hexdigest()
    filename = clean_filename(filename)
    kind = precheck(filename=filename, data=data)
    existing = Document.objects.filter(collection=collection, sha256=sha256).first()
    if existing is None or existing.status == DocumentStatus.FAILED:
        extraction_budget_charge(owner_id=collection.owner_id, size=len(data))
    if existing is not None:
        if existing.status == DocumentStatus.FAILED:
            with transaction.atomic():
                Document.objects.filter(pk=existing.pk, status=DocumentStatus.FAILED).update(
                    status=DocumentStatus.INDEXING, error="", data=data, attempts=0)
                enqueue_document_index(existing.pk)
            existing.refresh_from_db()
        return existing, False
    try:
        with transaction.atomic():
            document = Document.objects.create(
                collection=collection, title=PurePosixPath(filename).stem[:255] or filename, filename=filename,
                content_type=CONTENT_TYPES[kind], size=len(data), sha256=sha256, text="",
                status=DocumentStatus.INDEXING, data=data,
            )
            enqueue_document_index(document.pk)
    except IntegrityError:
        existing = Document.objects.filter(collection=collection, sha256=sha256).first()
        if existing is None:
            raise
        return existing, False
    return document, True


def extraction_budget_charge(*, owner_id: int, size: int) -> None:
    """Charge a file's bytes to its owner's extraction budget (KB_USER_EXTRACT_BYTES_PER_H over a sliding
    hour) before anything is stored: one account cannot keep the indexing workers busy for everyone else.
    Each file also has its own caps (KB_MAX_UPLOAD_BYTES, KB_INDEX_TIME_S, …; research/knowledge/extract.py)."""
    budget = int(settings.KB_USER_EXTRACT_BYTES_PER_H)
    verdict = sliding_window_hit(scope="kb_extract", key=f"user:{owner_id}", limit=budget, window=3600, cost=size)
    if not verdict.allowed:
        raise DocumentRejected(
            _("your documents of the last hour used the indexing budget (%(budget)s MB an hour); try this one "
              "again in %(minutes)d minutes") % {"budget": f"{budget / 1e6:,.0f}",
                                                 "minutes": max(1, verdict.retry_after // 60)})


def _document_fail(*, document_id: int, reason: str) -> None:
    Document.objects.filter(pk=document_id, status=DocumentStatus.INDEXING).update(
        status=DocumentStatus.FAILED, error=reason, data=None)
    logger.info("kb: document %s failed to index: %s", document_id, reason)


def document_index(*, document_id: int) -> None:
    """Extract, chunk and index a submitted document (the Celery task's body); ends `ready` or `failed`.

    A repeated delivery of a document that already ended is a no-op. A document whose worker was lost
    KB_INDEX_MAX_ATTEMPTS times (e.g. killed at the hard time limit) fails instead of looping.
    """
    with transaction.atomic():
        owner_id = (Document.objects.filter(pk=document_id).values_list("collection__owner_id", flat=True)
                    .first())
        if owner_id is None or not _indexing_turn(owner_id=owner_id, document_id=document_id):
            return  # fair share: sent again when one of the owner's documents ends
        claimed = Document.objects.filter(pk=document_id, status=DocumentStatus.INDEXING).update(
            attempts=F("attempts") + 1, updated=timezone.now())
    if not claimed:
        return
    try:
        _document_index_claimed(document_id)
    finally:
        _indexing_next(owner_id=owner_id)


def _indexing_turn(*, owner_id: int, document_id: int) -> bool:
    """Whether the owner has a free place among KB_USER_INDEXING_AT_ONCE documents being extracted
    (claimed, still indexing); decided under the owner's lock so two workers cannot both take the last."""
    cap = int(settings.KB_USER_INDEXING_AT_ONCE)
    if cap <= 0:
        return True
    owner_lock(owner_id)
    busy = (Document.objects.filter(collection__owner_id=owner_id, status=DocumentStatus.INDEXING, attempts__gt=0)
            .exclude(pk=document_id).count())
    return busy < cap


def _indexing_next(*, owner_id: int) -> None:
    """A document of the owner ended: send the oldest of theirs that waits for its turn (never claimed)."""
    if int(settings.KB_USER_INDEXING_AT_ONCE) <= 0:
        return
    waiting = (Document.objects.filter(collection__owner_id=owner_id, status=DocumentStatus.INDEXING, attempts=0)
               .order_by("pk").values_list("pk", flat=True).first())
    if waiting is not None:
        enqueue_document_index(waiting)


def _document_index_claimed(document_id: int) -> None:
    document = Document.objects.get(pk=document_id)
    if document.attempts > settings.KB_INDEX_MAX_ATTEMPTS:
        _document_fail(document_id=document_id, reason=_("indexing was interrupted %(n)s times (the worker was lost)")
                       % {"n": document.attempts - 1})
        return
    try:
        extracted = extract_document(filename=document.filename, data=bytes(document.data or b""))
        pieces = chunk_text(extracted.text)
    except DocumentRejected as exc:
        _document_fail(document_id=document_id, reason=str(exc))
        return
    except SoftTimeLimitExceeded:
        _document_fail(document_id=document_id, reason=_("extracting the text took longer than %(limit)s s")
                       % {"limit": settings.KB_INDEX_TIME_S})
        return
    with transaction.atomic():
        # Still wanted and not finished by a duplicate delivery (the row lock serialises them).
        if not Document.objects.select_for_update().filter(pk=document_id, status=DocumentStatus.INDEXING).exists():
            return
        Document.objects.filter(pk=document_id).update(
            title=extracted.title, content_type=extracted.content_type, text=extracted.text,
            chunk_count=len(pieces), status=DocumentStatus.READY, error="", data=None)
        _index_chunks(document=document, pieces=pieces)
    logger.info("kb: indexed document %s (%s chunks)", document_id, len(pieces))


def document_requeue_stale() -> int:
    """Re-send documents still `indexing` whose message was lost (the reaper calls this).

    Stale means untouched for longer than a task may run plus the queue grace, so a live run is not doubled.
    """
    older_than_s = settings.KB_INDEX_TIME_S + 60 + settings.STEP_QUEUE_GRACE_S
    cutoff = timezone.now() - timedelta(seconds=older_than_s)
    ids = list(Document.objects.filter(status=DocumentStatus.INDEXING, updated__lt=cutoff).values_list("pk", flat=True))
    for document_id in ids:
        Document.objects.filter(pk=document_id).update(updated=timezone.now())
        enqueue_document_index(document_id)
    return len(ids)


def _index_chunks(*, document: Document, pieces: list[str]) -> None:
    frequencies = [term_frequencies(piece) for piece in pieces]
    chunks = Chunk.objects.bulk_create(
        [
            Chunk(document=document, index=i, text=piece, length=length)
            for i, (piece, (_, length)) in enumerate(zip(pieces, frequencies, strict=True))
        ]
    )
    Posting.objects.bulk_create(
        (
            Posting(chunk_id=chunk.pk, term=term, tf=tf)
            for chunk, (counts, _) in zip(chunks, frequencies, strict=True)
            for term, tf in counts.items()
        ),
        batch_size=2000,
    )


def document_add(*, collection: Collection, filename: str, data: bytes, content_type: str = "") -> Document:
    """Add a file to a collection (or return the copy already there). Raises DocumentRejected."""
    document, _ = document_add_or_get(collection=collection, filename=filename, data=data, content_type=content_type)
    return document


@dataclass(frozen=True)
class AddResult:
    filename: str
    document: Document | None
    created: bool = False
    error: str = ""

    @property
    def status(self) -> str:
        if self.document is None:
            return "rejected"
        return "added" if self.created else "already present"


def document_add_many(
    *, collection: Collection, files: Iterable[tuple[str, bytes, str]], queue: bool = False
) -> list[AddResult]:
    """Add (filename, data, content_type) files one by one; a rejected file does not stop the others.

    `files` may be a generator, so only one file's bytes need be in memory at a time. With `queue`, each
    file is only checked and submitted (indexed later by a worker, see document_submit).
    """
    add = document_submit if queue else document_add_or_get
    results: list[AddResult] = []
    for filename, data, content_type in files:
        name = clean_filename(filename)
        try:
            document, created = add(collection=collection, filename=name, data=data, content_type=content_type)
        except DocumentRejected as exc:
            results.append(AddResult(filename=name, document=None, error=str(exc)))
        else:
            results.append(AddResult(filename=name, document=document, created=created))
    return results


def document_delete(*, document: Document) -> None:
    document.delete()
