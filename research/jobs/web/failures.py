"""Turn a failed job's raw errors into one readable reason, advice, and the raw lines for a details toggle."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.utils.translation import gettext as _

from research.jobs.models import JobStatus, ResearchJob
from research.jobs.search_check import search_failures
from research.tools.search.errors import ProviderErrorKind

_SEARCH_FAILED = "search failed: "


def provider_problem(label: str, kind: str) -> str:
    """'SearXNG refused the connection' from a provider's label and its error's kind (tools/search/errors.py)."""
    texts: dict[str, str] = {
        ProviderErrorKind.REFUSED: _("%(p)s refused the connection"),
        ProviderErrorKind.UNRESOLVED: _("%(p)s could not resolve its host"),
        ProviderErrorKind.TIMEOUT: _("%(p)s did not answer in time"),
        ProviderErrorKind.NOT_CONFIGURED: _("%(p)s is not set up"),
        ProviderErrorKind.UNKNOWN_PROVIDER: _("%(p)s is not a known search provider"),
    }
    return texts.get(kind, _("%(p)s failed")) % {"p": label}


def search_unreachable_text(errors: list[dict[str, Any]]) -> str:
    """One sentence over providers' errors as events carry them (ProviderError.as_dict())."""
    parts = [provider_problem(str(e.get("label") or e.get("provider") or ""), str(e.get("kind") or "")) for e in errors]
    if not parts:
        return _("No web search provider is configured.")
    return _("No web search provider could be reached (%(why)s).") % {"why": "; ".join(parts)}


def search_advice(*, has_kb: bool = False) -> str:
    if has_kb:  # never advise attaching what is attached
        return _("The attached knowledge base found nothing for these searches: add documents on the question's "
                 "subject to it, set SEARXNG_URL to a running SearXNG, or check this server's network "
                 "connection, then retry.")
    return _("Attach a knowledge base to the job, set SEARXNG_URL to a running SearXNG, or check this "
             "server's network connection, then retry.")


def _search_failed_body(text: str) -> str | None:
    """What follows the first "search failed: " that does not repeat it (a nested one is skipped)."""
    at = text.find(_SEARCH_FAILED)
    while at != -1:
        body = text[at + len(_SEARCH_FAILED) :]
        if not body.startswith("search failed"):
            return body
        at = text.find(_SEARCH_FAILED, at + 1)
    return None


def _kind(error: str) -> str:
    low = error.lower()
    if _search_failed_body(error) is not None or "no web search provider" in low or "no sources" in low:
        return "search"
    if low.startswith("skipped: it depends on step"):
        return "skipped"
    return "other"


def failure_explain(*, job: ResearchJob) -> dict[str, Any] | None:
    """None unless the job failed. The same reason across steps is said once."""
    if job.status != JobStatus.FAILED:
        return None
    step_errors = [(s.step_id, s.error) for s in job.steps.order_by("position") if s.error]
    details = [f"{sid}: {err}" for sid, err in step_errors]
    if job.error and not job.error.startswith("Every step failed."):
        details.insert(0, job.error)
    elif not step_errors and job.error:
        details.append(job.error)
    kinds = Counter(_kind(err) for _sid, err in step_errors)
    # Which providers failed, and how, comes from the structured provider errors the failed searches
    # recorded (search_check.search_failures), never from the error text.
    search_steps = [sid for sid, err in step_errors if _kind(err) == "search"]
    job_search = bool(job.error) and _search_failed_body(job.error) is not None
    search_errors = search_failures(job=job, step_ids=search_steps) if search_steps else []
    if not search_errors and job_search:
        search_errors = search_failures(job=job)
    summary = ""
    advice = ""
    if job_search or kinds.get("search"):
        summary = search_unreachable_text(search_errors)
        advice = search_advice(has_kb=bool(job.options.get("kb")))
    elif kinds.get("other"):
        distinct = list(dict.fromkeys(err for _s, err in step_errors if _kind(err) == "other"))
        first = distinct[0].split("\n")[0][:300]
        n = kinds["other"]
        summary = (_("A step failed: %(why)s") if n == 1 else _("%(n)d steps failed: %(why)s")) % {"n": n, "why": first}
        if len(distinct) > 1:
            summary += " " + _("(and %(n)d other reasons; see the details)") % {"n": len(distinct) - 1}
    elif job.error:
        summary = job.error.split("\n")[0][:300]
    else:
        summary = _("The job failed without a recorded reason.")
    if kinds.get("skipped"):
        n = kinds["skipped"]
        summary += " " + (_("One step was skipped because a step it depends on failed.") if n == 1 else
                          _("%(n)d steps were skipped because a step they depend on failed.") % {"n": n})
    if not advice and ("budget" in summary.lower() or "time limit" in summary.lower()):
        advice = _("Try fewer steps, or raise the job budgets (JOB_* settings).")
    if not advice and ("model" in summary.lower() or "llm" in summary.lower()):
        advice = _("Check that the model server (LLM_BASE_URL) is running, or pick the offline engine.")
    return {"summary": summary, "advice": advice, "details": details or [job.error]}
