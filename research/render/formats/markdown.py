"""The report itself (report.md): always part of a job, written by the report stage, never rendered."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from research.render.formats.base import OutputFile, OutputFormat, register

MARKDOWN = register(OutputFormat(
    kind="md", label="Markdown", short_label=_("Markdown"), basename="report",
    files=(OutputFile("md", ".md", "text/markdown"),), order=0,
))
