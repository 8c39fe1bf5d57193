"""What a refused form (429, 503) sent, to show it again with a "Try again" button (issue 33).

Only bodies already parsed are read: a multipart upload is never parsed here (its size is capped only by
the upload view's own handler), so its files are named as lost instead.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.http import HttpRequest

register = template.Library()

# A value this long, or with a line break, is what someone typed: shown in a textarea to copy or re-send.
LONG_VALUE = 80


def _secret(name: str) -> bool:
    """Never written back into a page: the CSRF token (a fresh one is used) and passwords."""
    low = name.lower()
    return low == "csrfmiddlewaretoken" or "password" in low or "token" in low


@register.simple_tag
def kept_form(request: HttpRequest) -> dict[str, Any] | None:
    """{"fields": [{name, value, long}], "upload": bool} for a refused form POST, else None."""
    if request.method != "POST" or request.path.startswith("/api/"):
        return None
    parsed = hasattr(request, "_post")  # by the CSRF check; an upload view defers it to its capped handler
    if request.content_type == "multipart/form-data" and not parsed:
        return {"fields": [], "upload": True}
    fields = [{"name": name, "value": value, "long": len(value) > LONG_VALUE or "\n" in value}
              for name, values in request.POST.lists() if not _secret(name) for value in values]
    upload = request.content_type == "multipart/form-data" and bool(request.FILES)
    return {"fields": fields, "upload": upload} if fields or upload else None
