"""A knowledge base for a job from its plan page: attach one of yours, or upload a file right there.

Offered above all when nothing else can be searched (docs/usage.md, "No internet, no model").
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from research.errors import error_text
from research.jobs import selectors, services
from research.ratelimit import ratelimited


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


@login_required
@require_POST
@ratelimited("write", "WRITE_RATE")
def job_kb_attach(request: HttpRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    try:
        collection_id = int(request.POST.get("kb", ""))
    except ValueError:
        messages.error(request, _("Choose a knowledge base."))
        return redirect("job_detail", job_id=job.pk)
    try:
        services.job_kb_attach(job=job, collection_id=collection_id)
    except services.InvalidAction as exc:
        messages.error(request, error_text(exc))
    else:
        messages.success(request, _("Knowledge base attached: the research will search it."))
    return redirect("job_detail", job_id=job.pk)


# CSRF is checked by the knowledge upload after its size-capping handler is installed (knowledge/views.py).
@csrf_exempt
@login_required
@ratelimited("kb_upload", "KB_UPLOAD_RATE")
def job_kb_upload(request: HttpRequest, job_id: int) -> HttpResponse:
    from research.knowledge import services as kb_services
    from research.knowledge.views import QUICK_COLLECTION, upload_into

    job = selectors.job_get_for_user(user=request.user, job_id=job_id)
    if request.method != "POST":
        return redirect("job_detail", job_id=job.pk)
    collection_id = job.options.get("kb")
    if collection_id is None:
        collection, _created = kb_services.collection_get_or_create(owner=_user(request), name=str(QUICK_COLLECTION))
        collection_id = collection.pk
    from research.knowledge.selectors import collection_get_for_user

    collection = collection_get_for_user(user=request.user, collection_id=collection_id)
    response = upload_into(request, collection=collection, done_url=reverse("job_detail", args=[job.pk]))
    if collection.documents.exists() and job.options.get("kb") != collection.pk:
        try:
            services.job_kb_attach(job=job, collection_id=collection.pk)
        except services.InvalidAction as exc:
            messages.error(request, error_text(exc))
    return response
