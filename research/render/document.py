"""Moved to research.report.document (issue 31): kept so older imports keep working."""

from research.report.document import *  # noqa: F403
