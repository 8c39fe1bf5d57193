"""A failed search reaches the job page as typed provider errors: events carry them, failures.py reads them."""

from __future__ import annotations

import socket

import pytest

from research.agents.types import SearchHit, ToolError
from research.jobs import services
from research.jobs.events import event_emit
from research.jobs.models import JobStatus, StepStatus
from research.jobs.search_check import search_check, search_check_errors
from research.jobs.units.context import JobContext
from research.jobs.web.failures import failure_explain, search_unreachable_text
from research.tools.search import PROVIDERS, ProviderError, ProviderErrorKind, SearchProvider, register


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def registry():
    saved = dict(PROVIDERS)
    yield PROVIDERS
    PROVIDERS.clear()
    PROVIDERS.update(saved)


def _failed_job(alice, step_ids):
    job = services.job_create(user=alice, question="How cheap is wind power?", options={})
    for i, sid in enumerate(step_ids):
        job.steps.create(step_id=sid, position=i, title=f"Step {sid}", status=StepStatus.FAILED)
    return job


def _search_and_fail(job, step_id):
    """What an engine does: search through the job's context, fail the step with the search's error text."""
    ctx = JobContext(job, step_id=step_id)
    with pytest.raises(ToolError) as err:
        ctx.search("wind power")
    job.steps.filter(step_id=step_id).update(error=f"no sources found for step '{step_id}' (search: {err.value})")


def test_provider_errors_are_events_with_their_fields(alice, settings, closed_port_url):
    settings.SEARCH_PROVIDERS = ["searxng"]
    settings.SEARXNG_URL = closed_port_url
    job = _failed_job(alice, ["s1"])
    _search_and_fail(job, "s1")
    (event,) = job.events.filter(type="step.activity", payload__kind="provider_error")
    p = event.payload
    assert (p["step"], p["provider"], p["label"], p["error_kind"], p["status"]) == (
        "s1", "searxng", "SearXNG", "refused", None)
    assert "Connection refused" in p["error"]


def test_failure_names_each_provider_once_from_the_events(alice, settings, closed_port_url):
    settings.SEARCH_PROVIDERS = ["searxng", "tavily"]
    settings.SEARXNG_URL = closed_port_url
    settings.TAVILY_API_KEY = ""
    job = _failed_job(alice, ["s1", "s2"])
    _search_and_fail(job, "s1")
    _search_and_fail(job, "s2")
    services.job_set_status(job=job, status=JobStatus.FAILED, error="Every step failed.")
    failure = failure_explain(job=job)
    assert failure["summary"] == ("No web search provider could be reached (SearXNG refused the connection; "
                                  "Tavily is not set up).")
    assert "SEARXNG_URL" in failure["advice"]
    assert any("Connection refused" in line for line in failure["details"])  # the raw text stays in the details


def test_a_registered_provider_is_named_by_its_label_with_no_other_edit(alice, settings, registry):
    @register
    class Brave(SearchProvider):
        name = "brave"
        label = "Brave Search"

        def search(self, query, max_results, opts):
            raise ProviderError("HTTP 429", kind=ProviderErrorKind.QUOTA, status=429)

    settings.SEARCH_PROVIDERS = ["brave"]
    job = _failed_job(alice, ["s1"])
    _search_and_fail(job, "s1")
    services.job_set_status(job=job, status=JobStatus.FAILED, error="Every step failed.")
    assert failure_explain(job=job)["summary"] == "No web search provider could be reached (Brave Search failed)."
    checked = search_check(job=job)
    assert checked["ok"] is False
    assert search_check_errors(checked) == [{"provider": "brave", "label": "Brave Search", "kind": "quota",
                                            "status": 429, "message": "HTTP 429"}]


def test_mixed_failures_report_the_failed_search(alice, settings, registry):
    @register
    class Flaky(SearchProvider):
        name = "flaky"
        label = "Flaky"
        calls = 0

        def search(self, query, max_results, opts):
            type(self).calls += 1
            if type(self).calls == 1:
                raise ProviderError("down", kind=ProviderErrorKind.UNREACHABLE)
            return [SearchHit(title="t", url="https://flaky.example/", snippet="")]

    settings.SEARCH_PROVIDERS = ["flaky"]
    job = _failed_job(alice, ["s1", "s2"])
    _search_and_fail(job, "s1")  # s1's search failed
    JobContext(job, step_id="s2").search("q")  # s2's search answered; s2 then fails for another reason
    job.steps.filter(step_id="s2").update(error="the model returned garbage")
    services.job_set_status(job=job, status=JobStatus.FAILED, error="Every step failed.")
    summary = failure_explain(job=job)["summary"]
    assert summary.startswith("No web search provider could be reached (Flaky failed).")


def test_old_search_checked_payloads_still_read():
    assert search_unreachable_text(search_check_errors({"ok": False, "reasons": [["searxng", "boom"]]})) == (
        "No web search provider could be reached (SearXNG failed).")


def test_old_provider_error_events_without_a_kind(alice):
    job = _failed_job(alice, ["s1"])
    event_emit(job_id=job.pk, type="step.activity",
               payload={"step": "s1", "kind": "provider_error", "provider": "duckduckgo", "error": "x"})
    job.steps.filter(step_id="s1").update(error="search failed: duckduckgo: x")
    services.job_set_status(job=job, status=JobStatus.FAILED, error="Every step failed.")
    assert failure_explain(job=job)["summary"] == "No web search provider could be reached (DuckDuckGo failed)."


def test_the_job_page_script_knows_no_provider_names(settings):
    """The timeline shows the label the event carries; a provider added later needs no script edit."""
    from pathlib import Path

    script = (Path(settings.BASE_DIR) / "static" / "js" / "job.js").read_text(encoding="utf-8").lower()
    assert PROVIDERS, "the registry is filled on import"
    for name, provider in PROVIDERS.items():
        assert name not in script and provider.label.lower() not in script, name
