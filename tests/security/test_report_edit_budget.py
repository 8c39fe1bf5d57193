"""B1: one report edit froze every user's requests (issue #25). The check is linear now, and an edit
over REPORT_CHECK_INLINE_CHARS leaves the web thread for a worker; the page says so.

Times are ratios to a plain edit of the same size measured in this process, never absolute seconds.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.urls import reverse

from research.agents.types import SourceRef
from research.jobs import services
from research.jobs.models import JobEvent, JobStatus, ReportEditCheck, ResearchJob, Source
from research.jobs.models import OutputStatus as Status
from research.jobs.units import edit_check
from research.report.check import report_check
from tests.support.costs import cost as _cost
from tests.support.procs import AsgiServer

PLAIN = "The market grew 12% in 2024 [4], driven by demand (see Table 2); analysts expect more.\n"
# The reported edits (each held daphne for the time given, with the stdlib engine).
PAYLOADS: dict[str, Callable[[], str]] = {
    "an open paren and 199,994 blanks (58 s)": lambda: "# T\n\n(" + " " * 199_994 + "x",
    "[a]( at the 10,000-[ cap (35 s)": lambda: "[a](" * 10_000,
    "<http:// repeated (12 s)": lambda: "<http://" * 25_000,
}
RATIO = 10.0


# Its own references list: a user's [n] means entry n of the list the user saw (issue 31), and after the
# first save that list numbers the source 1, so a plain edit posted again says what its [4] is.
REFS = "\n\n## References\n\n- [4] [M](https://a.example/m)\n"


def _plain(size: int) -> str:
    body = "# T\n\n" + PLAIN * (size // len(PLAIN) + 1)
    return body[: size - len(REFS)] + REFS




@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_report_check_on_the_reported_edits_costs_no_more_than_a_plain_edit(payload: str):
    sources = [SourceRef(number=4, url="https://a.example/m", title="M", text="The market grew 12% in 2024.",
                         kind="web")]
    text = PAYLOADS[payload]()
    plain = _plain(len(text))
    ratio = _cost(lambda: report_check(text, sources, locale="en-US")) / _cost(
        lambda: report_check(plain, sources, locale="en-US"))
    assert ratio < RATIO, f"{payload}: {ratio:.1f}x a plain edit of {len(text):,} characters"


def _done_job(alice) -> ResearchJob:
    job = services.job_create(user=alice, question="How big is the market?", options={"engine": "offline"})
    Source.objects.create(job=job, number=4, url="https://a.example/m", title="M",
                          text="The market grew 12% in 2024.", text_hash="x")
    services.report_version_create(job=job, markdown="# R\n\nThe market grew 12% in 2024 [4].\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    return job


@pytest.mark.django_db
def test_a_short_edit_is_still_checked_at_once(alice, client, settings):
    job = _done_job(alice)
    client.force_login(alice)
    response = client.post(reverse("job_report_edit", args=[job.pk]), {"markdown": _plain(2_000)}, follow=True)
    assert "Saved as a new version" in response.content.decode()
    assert job.report_versions.count() == 2 and not ReportEditCheck.objects.exists()


@pytest.mark.django_db
def test_the_live_preview_of_a_long_edit_says_why_it_is_not_rendered(alice, client, settings, monkeypatch):
    from research.jobs.web import views

    rendered: list[int] = []
    monkeypatch.setattr(views, "markdown_to_html", lambda text, **kw: rendered.append(len(text)) or "")
    job = _done_job(alice)
    client.force_login(alice)
    answer = client.post(reverse("job_report_preview", args=[job.pk]),
                         {"markdown": PAYLOADS["an open paren and 199,994 blanks (58 s)"]()}).json()
    assert "No live preview" in answer["html"] and "in the background" in answer["html"]
    assert rendered == []  # nothing of it was rendered on the web thread
    client.post(reverse("job_report_preview", args=[job.pk]), {"markdown": _plain(1_000)})
    assert rendered == [1_000]


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_long_edit_is_checked_by_a_worker_and_the_page_says_so(worker, alice, client):
    """The reported payload through the form: the view only stores it; the session's Celery worker checks it."""
    job = _done_job(alice)
    client.force_login(alice)
    payload = PAYLOADS["an open paren and 199,994 blanks (58 s)"]()
    response = client.post(reverse("job_report_edit", args=[job.pk]), {"markdown": payload}, follow=True)
    page = response.content.decode()
    assert "being checked in the background" in page and "200,001" in page
    check = ReportEditCheck.objects.get(job=job)
    assert JobEvent.objects.filter(job=job, type="report.checking", payload__check=check.pk).exists()
    deadline = time.monotonic() + 90
    while ReportEditCheck.objects.filter(pk=check.pk, status__in=[Status.PENDING, Status.RUNNING]).exists():
        assert time.monotonic() < deadline, worker.tail()
        time.sleep(0.2)
    check.refresh_from_db()
    assert check.status == Status.DONE, check.error
    latest = job.report_versions.order_by("-number").first()
    assert latest is not None and latest.number == check.version == 2 and latest.author == "user"
    assert JobEvent.objects.filter(job=job, type="report.ready", payload__version=2).exists()
    assert "research.jobs.tasks.report_edit_check" in worker.log.read_text(errors="replace")
    edit_check.report_edit_check_run(check_id=check.pk)  # a duplicate delivery changes nothing
    assert job.report_versions.count() == 2


@pytest.mark.django_db(transaction=True)  # the check holds a lease, renewed by a thread with its own connection
def test_a_background_check_that_fails_says_why(alice):
    job = _done_job(alice)
    check = ReportEditCheck.objects.create(job=job, markdown="   \n")
    edit_check.report_edit_check_run(check_id=check.pk)
    check.refresh_from_db()
    assert check.status == Status.FAILED and "cannot be empty" in check.error
    assert JobEvent.objects.filter(job=job, type="report.check_failed", payload__check=check.pk).exists()


@pytest.fixture
def server(django_db_setup, stack_env) -> Iterator[AsgiServer]:
    srv = AsgiServer({**stack_env, "REPORT_EDIT_RATE": "1000/h"}).start()
    yield srv
    srv.stop()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_healthz_answers_while_the_reported_edits_are_posted(server, alice, client):
    """Over daphne: each reported edit costs no more than a plain edit of its size, and /healthz answers
    from another client meanwhile (it waited 58 s before)."""
    job = _done_job(alice)
    client.force_login(alice)
    token = secrets.token_hex(16)
    headers = {"Cookie": f"sessionid={client.cookies['sessionid'].value}; csrftoken={token}", "X-CSRFToken": token}

    def post(markdown: str) -> float:
        start = time.perf_counter()
        response = httpx.post(f"{server.url}/jobs/{job.pk}/report/edit/", headers=headers,
                              data={"markdown": markdown}, timeout=300)
        assert response.status_code == 302, response.text[:500]
        return time.perf_counter() - start

    for name, make in PAYLOADS.items():
        text = make()
        plain = min(post(_plain(len(text))) for _ in range(2))
        with ThreadPoolExecutor(max_workers=4) as pool:
            edit = pool.submit(post, text)
            health = [pool.submit(httpx.get, f"{server.url}/healthz", timeout=300) for _ in range(3)]
            assert all(h.result().status_code == 200 for h in health)
            assert edit.result() < RATIO * plain, f"{name}: {edit.result():.2f}s against {plain:.2f}s plain"


@pytest.mark.django_db
def test_long_versions_are_not_diffed_on_the_web_thread(alice, client, monkeypatch):
    """difflib is superlinear on many repeated lines: two long versions are shown, not compared."""
    from research.jobs import selectors

    diffed: list[int] = []
    real = selectors.report_diff
    monkeypatch.setattr(selectors, "report_diff", lambda **kw: diffed.append(len(kw["old"])) or real(**kw))
    job = _done_job(alice)
    services.report_version_create(job=job, markdown="\n".join(f"l{i % 1001}" for i in range(40_000)), author="user")
    client.force_login(alice)
    page = client.get(reverse("job_report_version", args=[job.pk, 1])).content.decode()
    assert "too long to compare here" in page and diffed == []
    services.report_version_create(job=job, markdown="# R\n\nShort again.\n", author="user")
    page = client.get(reverse("job_report_version", args=[job.pk, 1])).content.decode()
    assert 'id="report-diff"' in page and len(diffed) == 1


@pytest.mark.django_db
def test_an_edit_with_too_many_emphasis_markers_is_refused_before_rendering(alice, client):
    """Each "*"/"_" costs markdown-it ~20 µs: 300,000 of them were 13x a plain report; the cap keeps it under 10x."""
    job = _done_job(alice)
    client.force_login(alice)
    attack = "# R\n\n" + "*a_" * 10_001
    response = client.post(reverse("job_report_edit", args=[job.pk]), {"markdown": attack})
    assert response.status_code == 400
    assert "The report has 20002 “*” and “_” characters; at most 20000 are accepted." in response.content.decode()
    assert job.report_versions.count() == 1
    preview = client.post(reverse("job_report_preview", args=[job.pk]), {"markdown": attack}).json()
    assert preview["html"] == "" and "20002" in preview["problem"]
