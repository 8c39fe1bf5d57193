"""Template filters for the conversation partials."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from research.render.html import markdown_to_html

register = template.Library()


@register.filter
def answer_html(markdown: str) -> SafeString:
    """A follow-up answer as sanitized HTML (the same renderer as the report)."""
    return markdown_to_html(markdown or "")
