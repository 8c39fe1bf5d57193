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
        # `errors`: each provider's typed failure (provider, label, kind, status, message); `reasons` keeps
        # the (provider, message) pairs earlier pages and API clients read.
        return {"ok": False, "reasons": [list(r) for r in exc.reasons], "errors": [e.as_dict() for e in exc.errors],
                "kb": has_kb, "web": True}
    return {"ok": True, "reasons": [], "kb": has_kb, "web": True}


def search_check_emit(*, job: ResearchJob) -> None:
    event_emit(job_id=job.pk, type=EVENT, payload=search_check(job=job))


def search_check_latest(*, job: ResearchJob) -> dict[str, Any] | None:
    row = JobEvent.objects.filter(job=job, type=EVENT).order_by("-seq").values_list("payload", flat=True).first()
    return row if isinstance(row, dict) else None


def _legacy(provider: str) -> dict[str, Any]:
    """An error recorded before errors were typed: its provider only."""
    from research.tools.search import provider_label

    return {"provider": provider, "label": provider_label(provider), "kind": "failed", "status": None, "message": ""}


def search_check_errors(check: dict[str, Any]) -> list[dict[str, Any]]:
    """The typed provider errors of a `search.checked` payload."""
    if "errors" in check:
        return list(check["errors"])
    return [_legacy(str(r[0])) for r in check.get("reasons") or []]


def search_failures(*, job: ResearchJob, step_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """The providers that failed the job's searches (of these steps, if given), each once with its latest
    error, in the order they first failed: from the `provider_error` activity events (ProviderError.as_dict())."""
    from research.tools.search import provider_label

    rows = JobEvent.objects.filter(job=job, type="step.activity", payload__kind="provider_error").order_by("seq")
    found: dict[str, dict[str, Any]] = {}
    for p in rows.values_list("payload", flat=True):
        if step_ids is not None and p.get("step") not in step_ids:
            continue
        provider = str(p.get("provider") or "")
        found[provider] = {"provider": provider, "label": p.get("label") or provider_label(provider),
                           "kind": p.get("error_kind") or "failed", "status": p.get("status"),
                           "message": str(p.get("error") or "")}
    return list(found.values())
