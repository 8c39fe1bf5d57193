"""Writes for knowledge bases. Callers pass objects they already scoped to the user (see selectors)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from research.knowledge.extract import DocumentRejected, clean_filename, extract_document
from research.knowledge.models import Chunk, Collection, Document, Posting
from research.knowledge.text import chunk_text, term_frequencies

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
    """Validate, extract, chunk and index one file; (document, created).

    The same bytes already in the collection are not indexed twice: the existing
    document comes back with created=False. Raises DocumentRejected for files we
    refuse. Everything is written in one transaction, so a failure leaves nothing.
    """
    sha256 = hashlib.sha256(data).hexdigest()
    existing = Document.objects.filter(collection=collection, sha256=sha256).first()
    if existing is not None:
        return existing, False

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


def document_add_many(*, collection: Collection, files: Iterable[tuple[str, bytes, str]]) -> list[AddResult]:
    """Add (filename, data, content_type) files one by one; a rejected file does not stop the others.

    `files` may be a generator, so only one file's bytes need be in memory at a time.
    """
    results: list[AddResult] = []
    for filename, data, content_type in files:
        name = clean_filename(filename)
        try:
            document, created = document_add_or_get(
                collection=collection, filename=name, data=data, content_type=content_type
            )
        except DocumentRejected as exc:
            results.append(AddResult(filename=name, document=None, error=str(exc)))
        else:
            results.append(AddResult(filename=name, document=document, created=created))
    return results


def document_delete(*, document: Document) -> None:
    document.delete()
