"""Is anything searchable? Checked when a plan is made (and on the new-job page), so the pages can warn in time.

The payload says what is true of this job: `web` (web search asked for), `web_ok` (a web provider
answered), `kb` (a knowledge base attached) and `ok` (something can be searched: the web or the KB).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache

from research.jobs.events import event_emit
from research.jobs.models import JobEvent, ResearchJob

EVENT = "search.checked"
PROBE_TIMEOUT_S = 5.0
# The new-job page asks at most this often per web process (a dead DNS costs the probe's whole timeout).
PROBE_CACHE_S = 60
# The page's probe waits less than the plan stage's: it holds a web thread while a dead DNS times out.
PAGE_PROBE_TIMEOUT_S = 2.0


def web_probe(timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """{"web_ok", "reasons", "errors", "configured"}: one tiny query to the web providers."""
    from research.tools.search import KNOWLEDGE, SearchError, web_search

    providers = [p for p in settings.SEARCH_PROVIDERS if p != KNOWLEDGE]
    if not providers:
        return {"web_ok": False, "reasons": [], "errors": [], "configured": False}
    try:
        web_search("research", providers=providers, max_results=1, timeout=timeout)
    except SearchError as exc:
        # `errors`: each provider's typed failure (provider, label, kind, status, message); `reasons` keeps
        # the (provider, message) pairs earlier pages and API clients read.
        return {"web_ok": False, "reasons": [list(r) for r in exc.reasons],
                "errors": [e.as_dict() for e in exc.errors], "configured": True}
    return {"web_ok": True, "reasons": [], "errors": [], "configured": True}


def web_probe_cached() -> dict[str, Any]:
    key = "search_check:web_probe:" + ",".join(settings.SEARCH_PROVIDERS) + ":" + str(settings.SEARXNG_URL)
    found = cache.get(key)
    if isinstance(found, dict):
        return found
    result = web_probe(timeout=PAGE_PROBE_TIMEOUT_S)
    cache.set(key, result, PROBE_CACHE_S)
    return result


def search_check(*, job: ResearchJob) -> dict[str, Any]:
    """Try the web providers once with a tiny query (unless web search is off for this job)."""
    has_kb = bool(job.options.get("kb"))
    web = bool(job.options.get("web", True))
    if not web:
        return {"ok": has_kb, "reasons": [], "errors": [], "kb": has_kb, "web": False, "web_ok": False}
    probe = web_probe()
    return {"ok": probe["web_ok"] or has_kb, "reasons": probe["reasons"], "errors": probe["errors"], "kb": has_kb,
            "web": True, "web_ok": probe["web_ok"]}


def search_check_emit(*, job: ResearchJob) -> None:
    event_emit(job_id=job.pk, type=EVENT, payload=search_check(job=job))


def search_check_kb_attached(*, job: ResearchJob) -> None:
    """A knowledge base was attached: say so, keeping what the last probe found about the web (no new probe)."""
    last = search_check_latest(job=job) or {}
    web = bool(job.options.get("web", True))
    web_ok = bool(last.get("web_ok", last.get("ok", False))) and web
    event_emit(job_id=job.pk, type=EVENT, payload={"ok": True, "reasons": last.get("reasons", []),
                                                    "errors": last.get("errors", []), "kb": True, "web": web,
                                                    "web_ok": web_ok})


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
