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
