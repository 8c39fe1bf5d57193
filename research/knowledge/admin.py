from __future__ import annotations

from django.contrib import admin

from research.knowledge.models import Chunk, Collection, Document, Posting


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created"]
    list_filter = ["owner"]
    search_fields = ["name", "owner__username"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "filename", "collection", "content_type", "size", "chunk_count", "created"]
    list_filter = ["content_type"]
    search_fields = ["title", "filename", "sha256"]
    list_select_related = ["collection"]
    raw_id_fields = ["collection"]
    readonly_fields = ["sha256", "size", "chunk_count", "created"]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["__str__", "document", "index", "length"]
    raw_id_fields = ["document"]
    list_select_related = ["document"]


@admin.register(Posting)
class PostingAdmin(admin.ModelAdmin):
    list_display = ["term", "tf", "chunk"]
    search_fields = ["term"]
    raw_id_fields = ["chunk"]
