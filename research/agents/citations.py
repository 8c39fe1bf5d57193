"""Moved to research.report.citations (issue 31): kept so older imports keep working."""

from research.report.citations import *  # noqa: F403
