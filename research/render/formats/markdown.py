"""The report itself (report.md): always part of a job, written by the report stage, never rendered."""

from __future__ import annotations

from research.render.formats.base import OutputFile, OutputFormat, register
from research.render.formats.base import translated as _

MARKDOWN = register(OutputFormat(
    kind="md", label="Markdown", short_label=_("Markdown"), basename="report",
    files=(OutputFile("md", ".md", "text/markdown"),), order=0,
))
