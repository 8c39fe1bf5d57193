"""Every state-changing route is rate-limited, per account where signed in (issue 34, case 4 and 7).

The URL resolver and the API router are walked, so a new POST route without a limit fails here.
"""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from research.jobs import conversation, dispatch, services
from research.jobs.models import FollowUp, JobStatus, OutputStatus, ResearchJob, Source
from research.ratelimit import RATE_ATTR
from tests.support.urls import fill_route

pytestmark = [pytest.mark.django_db]


def _all_patterns(resolver: URLResolver | None = None, prefix: str = "") -> list[tuple[str, URLPattern]]:
    out: list[tuple[str, URLPattern]] = []
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            out += _all_patterns(entry, prefix + str(entry.pattern))
        else:
            out.append((prefix + str(entry.pattern), entry))
    return out


WEB = [(route, p) for route, p in _all_patterns() if not route.startswith("api/")]


def test_the_walk_sees_the_routes_of_the_issue():
    routes = {route for route, _p in WEB}
    assert {"jobs/<int:job_id>/report/v/<int:number>/", "jobs/<int:job_id>/followups/",
            "jobs/<int:job_id>/followups/<int:number>/fold/", "accounts/login/", "i18n/setlang/"} <= routes
    assert any(route.startswith("admin/") for route in routes)


@pytest.mark.parametrize(("route", "pattern"), WEB, ids=[r for r, _p in WEB])
def test_every_web_route_that_takes_a_post_declares_a_limit(alice, alice_objects, route, pattern):
    setting = getattr(pattern.callback, RATE_ATTR, None)
    if setting is not None:
        assert getattr(django_settings, setting), f"{route}: {setting} is empty (no limit)"
        return
    client = Client()
    client.force_login(alice)
    status = client.post(fill_route(route, alice_objects)).status_code
    assert status == 405, f"{route} answers POST with {status} and has no rate limit"


def test_every_api_operation_that_changes_state_is_throttled():
    from research.api.api import api

    checked = 0
    for _prefix, router in api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                if set(operation.methods) - {"GET", "HEAD", "OPTIONS"}:
                    assert operation.throttle_objects, f"{operation.methods} {path} has no throttle"
                    checked += 1
    assert checked >= 8  # jobs, plan, clarify, research-anyway, follow-ups, fold, cancel, retry


def test_signed_in_limits_count_the_account_not_the_address(settings, alice, bob):
    """Issue 34 case 7: edit limits were per address too, so one office shared them."""
    settings.WRITE_RATE = "2/h"
    office = "192.0.2.50"
    for user in (alice, bob):
        client = Client(REMOTE_ADDR=office)
        statuses = []
        for _ in range(3):
            client.force_login(user)
            statuses.append(client.post("/accounts/logout/").status_code)
        assert statuses == [302, 302, 429], (user.username, statuses)


@pytest.fixture
def done_job(alice, monkeypatch) -> ResearchJob:
    sent: list[tuple[object, ...]] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: sent.append(a))
    job = services.job_create(user=alice, question="How big is the market?", options={"engine": "offline",
                                                                                       "outputs": ["md", "pdf"]})
    Source.objects.create(job=job, number=1, url="https://a.example/m", title="M",
                          text="The market grew 12% in 2024.", text_hash="x")
    services.report_version_create(job=job, markdown="# R\n\nThe market grew 12% in 2024 [1].\n", author="reporter")
    services.report_version_create(job=job, markdown="# R\n\nThe market grew by 12% in 2024 [1].\n", author="user")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    sent.clear()
    job.sent = sent  # type: ignore[attr-defined]
    return job


def test_restoring_the_current_version_is_a_no_op(done_job, alice_client):
    url = reverse("job_report_version", args=[done_job.pk, 2])
    response = alice_client.post(url, follow=True)
    assert "is the current version; nothing changed" in response.content.decode()
    assert done_job.report_versions.count() == 2
    assert not [a for a in done_job.sent if a[0] == "render"]  # type: ignore[attr-defined]


def test_restoring_a_version_counts_as_an_edit(settings, done_job, alice_client):
    """Issue 34 case 4: one account made 44 versions with full re-renders in 90 s by restoring."""
    settings.REPORT_EDIT_RATE = "3/h"
    statuses = []
    for n in range(6):
        statuses.append(alice_client.post(reverse("job_report_version", args=[done_job.pk, 1 + n % 2])).status_code)
        ResearchJob.objects.filter(pk=done_job.pk).update(status=JobStatus.DONE)  # its renders ended
    # v1, then v2 (now older than the restored v3) ... each a new version until the limit.
    assert statuses[:3] == [302] * 3 and statuses[3:] == [429] * 3, statuses
    assert done_job.report_versions.count() == 5
    refused = alice_client.post(reverse("job_report_version", args=[done_job.pk, 1]))
    assert int(refused["Retry-After"]) > 0 and "Too many requests" in refused.content.decode()


def test_follow_ups_are_limited_per_account(settings, done_job, alice_client):
    """Issue 34 case 4: 300 follow-ups were accepted in 4.4 s."""
    settings.FOLLOWUP_RATE = "2/h"
    url = reverse("job_followup", args=[done_job.pk])
    statuses = [alice_client.post(url, {"question": f"Why {n}?"}).status_code for n in range(4)]
    assert statuses == [302, 302, 429, 429]
    assert FollowUp.objects.filter(job=done_job).count() == 2
    with pytest.raises(services.RateLimited):  # the API and MCP call the same service
        conversation.followup_ask(job=done_job, question="And via the API?")


def test_folding_an_answer_counts_as_an_edit(settings, done_job, alice_client):
    settings.REPORT_EDIT_RATE = "1/h"
    for number in (1, 2):
        FollowUp.objects.create(job=done_job, number=number, question=f"Q{number}?", status=OutputStatus.DONE,
                                answer="The market grew 12% in 2024 [1].")
    assert alice_client.post(reverse("job_followup_fold", args=[done_job.pk, 1])).status_code == 302
    refused = alice_client.post(reverse("job_followup_fold", args=[done_job.pk, 2]))
    assert refused.status_code == 429
    assert FollowUp.objects.get(job=done_job, number=2).folded_into is None
