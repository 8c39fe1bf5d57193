"""Moved to research.report.check (issue 31): kept so older imports keep working."""

from research.report.check import *  # noqa: F403
