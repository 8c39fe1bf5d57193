"""Readable error pages where Django would answer a bare status line."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.defaults import bad_request as django_bad_request
from django.views.defaults import page_not_found


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: say what was wrong with an oversized form (e.g. a plan with hundreds of steps)."""
    if isinstance(exception, TooManyFieldsSent):
        message = _(
            "The form sent more than %(n)d fields, so it was not read. A plan may have at most %(steps)d steps; "
            "remove steps and try again."
        ) % {"n": settings.DATA_UPLOAD_MAX_NUMBER_FIELDS, "steps": settings.JOB_MAX_STEPS}
        return render(request, "400.html", {"message": message}, status=400)
    return django_bad_request(request, exception)


def error_text(exc: Exception) -> str:
    """A refusal as one line for a flash message: a ValidationError's messages joined, else the exception's text."""
    return "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: under /api/ the API's JSON error shape (a URL no route matches, e.g. a job id that is not
    a number), elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "errors": []}, status=404)
    return page_not_found(request, exception)
