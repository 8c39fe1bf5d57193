"""Knowledge bases: a user's collections of documents, split into chunks, indexed for BM25."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Collection(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="kb_collections",
        db_index=False,  # the (owner, name) unique index serves owner lookups
    )
    name = models.CharField(_("name"), max_length=100)
    description = models.TextField(_("description"), blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Leading columns of the unique constraints below index the foreign keys (db_index=False above).
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="kb_collection_unique_owner_name")]

    def __str__(self) -> str:
        return self.name


class DocumentStatus(models.TextChoices):
    INDEXING = "indexing", _("indexing…")
    READY = "ready", _("indexed")
    FAILED = "failed", _("failed")


class Document(models.Model):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents", db_index=False)
    title = models.CharField(max_length=255)
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField(help_text="bytes as uploaded")
    sha256 = models.CharField(max_length=64)
    text = models.TextField(help_text="extracted plain text")
    chunk_count = models.PositiveIntegerField(default=0)
    # Uploads are indexed by a Celery task (services.document_index): the bytes wait in `data` until then.
    status = models.CharField(max_length=16, choices=DocumentStatus.choices, default=DocumentStatus.READY)
    error = models.TextField(blank=True, help_text="why indexing failed, shown to the owner")
    data = models.BinaryField(null=True, blank=True, editable=False, help_text="the upload, until indexed")
    attempts = models.PositiveSmallIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created", "-id"]
        # The same bytes are stored once per collection; adding them again returns this row.
        constraints = [models.UniqueConstraint(fields=["collection", "sha256"], name="kb_document_unique_sha256")]

    def __str__(self) -> str:
        return self.title

    @property
    def kb_url(self) -> str:
        return f"kb://{self.pk}"


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    index = models.PositiveIntegerField()
    text = models.TextField()
    length = models.PositiveIntegerField(help_text="number of index terms (BM25 document length)")

    class Meta:
        ordering = ["document_id", "index"]
        constraints = [models.UniqueConstraint(fields=["document", "index"], name="kb_chunk_unique_index")]

    def __str__(self) -> str:
        return f"{self.document_id}#chunk-{self.index}"

    @property
    def kb_url(self) -> str:
        return f"kb://{self.document_id}#chunk-{self.index}"


class Posting(models.Model):
    """Inverted index: how often `term` occurs in `chunk`, written once at index time.

    A search reads only the postings of its own terms, so its cost follows the
    query, not the size of the knowledge base, on any database.
    """

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="postings", db_index=False)
    term = models.CharField(max_length=64)
    tf = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["term", "chunk"], name="kb_posting_term_chunk")]
        constraints = [models.UniqueConstraint(fields=["chunk", "term"], name="kb_posting_unique_chunk_term")]

    def __str__(self) -> str:
        return f"{self.term}×{self.tf} in {self.chunk_id}"
