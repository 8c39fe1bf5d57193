"""Template filters for the conversation partials."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from research.render.html import markdown_to_html

register = template.Library()


@register.filter
def answer_html(markdown: str, number: int = 0) -> SafeString:
    """A follow-up answer as sanitized HTML (the same renderer as the report); its anchors are prefixed
    with the follow-up's number so its [n] links reach its own references, not the report's."""
    return markdown_to_html(markdown or "", anchor_prefix=f"fu{int(number)}-" if number else "")
