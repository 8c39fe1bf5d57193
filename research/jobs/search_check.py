"""Is any web search provider reachable? Checked when a plan is made, so the plan form can warn in time."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from research.jobs.events import event_emit
from research.jobs.models import JobEvent, ResearchJob

EVENT = "search.checked"
PROBE_TIMEOUT_S = 5.0


def search_check(*, job: ResearchJob) -> dict[str, Any]:
    """Try the web providers once with a tiny query; a knowledge base alone also counts as reachable."""
    from research.tools.search import KNOWLEDGE, SearchError, web_search

    providers = [p for p in settings.SEARCH_PROVIDERS if p != KNOWLEDGE]
    has_kb = bool(job.options.get("kb"))
    if not job.options.get("web", True) or not providers:
        return {"ok": has_kb, "reasons": [], "kb": has_kb, "web": False}
    try:
        web_search("research", providers=providers, max_results=1, timeout=PROBE_TIMEOUT_S)
    except SearchError as exc:
        return {"ok": False, "reasons": [list(r) for r in exc.reasons], "kb": has_kb, "web": True}
    return {"ok": True, "reasons": [], "kb": has_kb, "web": True}


def search_check_emit(*, job: ResearchJob) -> None:
    event_emit(job_id=job.pk, type=EVENT, payload=search_check(job=job))


def search_check_latest(*, job: ResearchJob) -> dict[str, Any] | None:
    row = JobEvent.objects.filter(job=job, type=EVENT).order_by("-seq").values_list("payload", flat=True).first()
    return row if isinstance(row, dict) else None
