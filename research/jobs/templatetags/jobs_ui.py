"""Words a user reads for stored codes (step types, plan authors), translated."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext as _

register = template.Library()


@register.filter
def step_type_label(value: str) -> str:
    labels = {"research": _("Research"), "analysis": _("Analysis"), "processing": _("Processing (code)")}
    return labels.get(str(value), str(value))


@register.filter
def author_label(value: str) -> str:
    labels = {"planner": _("planner"), "user": _("you"), "reporter": _("reporter")}
    return labels.get(str(value), str(value))


@register.simple_tag
def output_short_labels() -> list[tuple[str, str]]:
    """(kind, noun) of every registered output format, for the timeline ("Making the slides")."""
    from research.render.formats import output_formats

    return [(f.kind, str(f.short_label)) for f in output_formats()]
