"""Knowledge-base pages. Thin: objects come from user-scoped selectors (404 for anyone else), writes go to services.

Every view loads its object before looking at the method, so an outsider gets
the same 404 for GET and POST and learns nothing about what exists.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from research.knowledge import selectors, services
from research.knowledge.forms import CollectionForm, SearchForm, UploadForm
from research.knowledge.models import Collection
from research.knowledge.uploads import MAX_FILES_PER_UPLOAD, KBUploadLimitHandler, per_file_limit, request_limit
from research.ratelimit import ratelimited

# The knowledge base a file uploaded from the new-job or plan page goes into.
QUICK_COLLECTION = gettext_lazy("My documents")
# Longer texts are cut on the page (the full text stays indexed and in the admin).
DOCUMENT_TEXT_PREVIEW_CHARS = 200_000


def _user(request: HttpRequest) -> User:
    """The signed-in user (every view here is behind login_required)."""
    assert isinstance(request.user, User)
    return request.user


@login_required
@ratelimited("write", "WRITE_RATE")
def collection_list(request: HttpRequest) -> HttpResponse:
    form = CollectionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            collection = services.collection_create(
                owner=_user(request),
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            messages.success(request, _("Knowledge base “%(name)s” created.") % {"name": collection.name})
            return redirect("knowledge:collection_detail", collection_id=collection.pk)
    elif request.method not in ("GET", "HEAD", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    collections = selectors.collection_list_for_user(user=request.user)
    return render(request, "knowledge/collection_list.html", {"collections": collections, "form": form})


def _render_detail(request: HttpRequest, collection: Collection, *, status: int = 200) -> HttpResponse:
    search_form = SearchForm(request.GET or None)
    hits: list[selectors.KBHit] = []
    query = ""
    if search_form.is_valid():
        query = search_form.cleaned_data["q"].strip()
        if query:
            hits = selectors.kb_search(user=request.user, query=query, collection_ids=[collection.pk], limit=10)
    context = {
        "collection": collection,
        "documents": selectors.document_list(collection=collection),
        "upload_form": UploadForm(),
        "search_form": search_form,
        "query": query,
        "hits": hits,
        "max_upload_bytes": per_file_limit(),
    }
    return render(request, "knowledge/collection_detail.html", context, status=status)


@login_required
def collection_detail(request: HttpRequest, collection_id: int) -> HttpResponse:
    collection = selectors.collection_get_for_user(user=request.user, collection_id=collection_id)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    return _render_detail(request, collection)


@login_required
@ratelimited("write", "WRITE_RATE")
def collection_delete(request: HttpRequest, collection_id: int) -> HttpResponse:
    collection = selectors.collection_get_for_user(user=request.user, collection_id=collection_id)
    if request.method == "POST":
        name = collection.name
        services.collection_delete(collection=collection)
        messages.success(request, _("Knowledge base “%(name)s” deleted.") % {"name": name})
        return redirect("knowledge:collection_list")
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "POST"])
    # GET shows a confirmation form (no inline JS confirm() under our CSP).
    return render(
        request,
        "knowledge/confirm_delete.html",
        {"object": collection, "collection": collection, "cancel_url": collection_detail_url(collection.pk)},
    )


@login_required
def collection_statuses(request: HttpRequest, collection_id: int) -> HttpResponse:
    """The documents' indexing states as JSON, for the pages that show "indexing…" (static/js/kb_status.js)."""
    collection = selectors.collection_get_for_user(user=request.user, collection_id=collection_id)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    documents = selectors.document_statuses(collection=collection)
    for d in documents:  # the label exactly as the page writes it, in the page's language
        d["label"] = render_to_string("knowledge/_document_status.html", {"document": d}, request=request).strip()
    return JsonResponse({"documents": documents})


def collection_detail_url(collection_id: int) -> str:
    return reverse("knowledge:collection_detail", kwargs={"collection_id": collection_id})


# CSRF is checked by _upload, after the size-capping handler is installed: the
# CSRF check reads request.POST, which parses the body with whatever handlers
# are in place at that moment (see Django's "modifying upload handlers on the fly").
@csrf_exempt
@login_required
@ratelimited("kb_upload", "KB_UPLOAD_RATE")
def document_upload(request: HttpRequest, collection_id: int) -> HttpResponse:
    collection = selectors.collection_get_for_user(user=request.user, collection_id=collection_id)
    return upload_into(request, collection=collection)


def upload_into(request: HttpRequest, *, collection: Collection, done_url: str | None = None) -> HttpResponse:
    """Add the posted files to `collection`, then redirect to done_url (default: the collection's page).

    Shared with the new-job and plan pages (upload a file right there). The caller must be csrf_exempt:
    CSRF is checked by _upload, after the size-capping handler is installed.
    """
    if request.method != "POST":
        return redirect(done_url or collection_detail_url(collection.pk))
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    refusal, status = "", 200
    if declared <= 0:
        # Without a length Django would not parse the body at all; say why instead of "no file".
        refusal, status = _("Upload refused: the request had no Content-Length."), 411
    elif declared > request_limit():
        refusal, status = (
            _("Upload refused: %(size)s bytes is more than one upload may carry (%(limit)s bytes).")
            % {"size": f"{declared:,}", "limit": f"{request_limit():,}"},
            413,
        )
    if refusal:
        messages.error(request, refusal)
        return redirect(done_url) if done_url else _render_detail(request, collection, status=status)
    handler = KBUploadLimitHandler(request)
    request.upload_handlers.insert(0, handler)
    return _upload(request, collection=collection, handler=handler,
                   done_url=done_url or collection_detail_url(collection.pk))


@csrf_exempt
@login_required
@ratelimited("kb_upload", "KB_UPLOAD_RATE")
def document_upload_quick(request: HttpRequest) -> HttpResponse:
    """Upload into the user's "My documents" knowledge base (made on first use), from the new-job page.

    Back on that page the knowledge base is chosen for the job (?kb=ID).
    """
    if request.method != "POST":
        return redirect("job_new")
    collection, _created = services.collection_get_or_create(owner=_user(request), name=str(QUICK_COLLECTION))
    return upload_into(request, collection=collection, done_url=f"{reverse('job_new')}?kb={collection.pk}")


@csrf_protect
def _upload(request: HttpRequest, *, collection: Collection, handler: KBUploadLimitHandler,
            done_url: str) -> HttpResponse:
    # Parse the body now (the CSRF check may not have), so the handler has seen every file.
    form = UploadForm(request.POST, request.FILES)
    limit = f"{per_file_limit():,}"
    for name in handler.too_large:
        messages.error(
            request, _("%(file)s: rejected: the file is larger than %(limit)s bytes.") % {"file": name, "limit": limit}
        )
    if handler.aborted:
        messages.error(request, _("Upload refused: the files together are too large."))
        return redirect(done_url)
    if not form.is_valid():
        if not handler.too_large:
            for errors in form.errors.values():
                for error in errors:
                    messages.error(request, str(error))
        return redirect(done_url)
    files = form.cleaned_data["files"]
    if len(files) > MAX_FILES_PER_UPLOAD:
        messages.error(request, _("Upload at most %(n)s files at a time.") % {"n": MAX_FILES_PER_UPLOAD})
        return redirect(done_url)

    def read_files() -> Iterator[tuple[str, bytes, str]]:
        # One file in memory at a time; each is already capped by the handler.
        for uploaded in files:
            yield uploaded.name or "", uploaded.read(), uploaded.content_type or ""

    # Only cheap checks here; a worker extracts and indexes (the document shows "indexing…" until then).
    for result in services.document_add_many(collection=collection, files=read_files(), queue=True):
        if result.document is None:
            messages.error(
                request, _("%(file)s: rejected: %(reason)s") % {"file": result.filename, "reason": result.error}
            )
        elif result.created:
            messages.success(request, _("%(file)s: added; indexing…") % {"file": result.filename},
                             extra_tags="kb-indexing")  # removed by kb_status.js once indexed
        else:
            messages.info(
                request,
                _("%(file)s: already present as “%(title)s”.")
                % {"file": result.filename, "title": result.document.title},
            )
    return redirect(done_url)


@login_required
def document_detail(request: HttpRequest, document_id: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, document_id=document_id)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    text = document.text
    truncated = len(text) > DOCUMENT_TEXT_PREVIEW_CHARS
    context = {
        "document": document,
        "collection": document.collection,
        "text": text[:DOCUMENT_TEXT_PREVIEW_CHARS],
        "truncated": truncated,
    }
    return render(request, "knowledge/document_detail.html", context)


@login_required
@ratelimited("write", "WRITE_RATE")
def document_delete(request: HttpRequest, document_id: int) -> HttpResponse:
    document = selectors.document_get_for_user(user=request.user, document_id=document_id)
    collection_id = document.collection_id
    if request.method == "POST":
        title = document.title
        services.document_delete(document=document)
        messages.success(request, _("Document “%(title)s” deleted.") % {"title": title})
        return redirect(collection_detail_url(collection_id))
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(
        request,
        "knowledge/confirm_delete.html",
        {
            "object": document,
            "collection": document.collection,
            "cancel_url": reverse("knowledge:document_detail", kwargs={"document_id": document.pk}),
        },
    )
