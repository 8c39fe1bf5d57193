"""The worker-side units in-process, table by table: the scheduler, the claims and the reaper.

The real-worker versions of these paths are in tests/integration and tests/faults; here each rule is
checked against the database alone, with the broker replaced by a list of the units that would be sent.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from research.agents.types import Plan, PlanStep
from research.jobs import dispatch, services
from research.jobs.models import (
    FollowUp,
    JobStatus,
    JobStep,
    OutputRender,
    OutputStatus,
    ReportEditCheck,
    ResearchJob,
    StepStatus,
)
from research.jobs.units import edit_check
from research.jobs.units.reaper import reap_stale_work
from research.jobs.units.renders import render_claim
from research.jobs.units.stages import stage_claim
from research.jobs.units.steps import job_schedule, step_claim
from tests.support.jobs import TO_REVIEW, job_walk


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    units: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: units.append(a))
    return units


def researching_job(user, steps: list[PlanStep], **options) -> ResearchJob:
    job = services.job_create(user=user, question="How do heat pumps work?", options=options)
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(job=job, plan=Plan(title="P", steps=steps), author="planner")
    services.plan_start(job=job, version=version)
    job.refresh_from_db()
    return job


def step_statuses(job: ResearchJob) -> dict[str, str]:
    return dict(JobStep.objects.filter(job=job).values_list("step_id", "status"))


# a, b independent; c waits for a; d waits for b and c.
PLAN = [PlanStep(id="a", title="A"), PlanStep(id="b", title="B"), PlanStep(id="c", title="C", depends_on=["a"]),
        PlanStep(id="d", title="D", depends_on=["b", "c"])]
P, Q, R, D, F = StepStatus.PENDING, StepStatus.QUEUED, StepStatus.RUNNING, StepStatus.DONE, StepStatus.FAILED


@pytest.mark.parametrize(
    ("before", "concurrency", "after", "job_status"),
    [
        # nothing started: the two independent steps are queued
        ({}, 0, {"a": Q, "b": Q, "c": P, "d": P}, JobStatus.RESEARCHING),
        # a concurrency of 1 queues one step, in plan order
        ({}, 1, {"a": Q, "b": P, "c": P, "d": P}, JobStatus.RESEARCHING),
        # one slot is taken by a running step
        ({"a": R}, 1, {"a": R, "b": P, "c": P, "d": P}, JobStatus.RESEARCHING),
        # a done: c may start; b still running
        ({"a": D, "b": R}, 0, {"a": D, "b": R, "c": Q, "d": P}, JobStatus.RESEARCHING),
        # a failed: c and, through c, d are skipped; b still runs
        ({"a": F, "b": R}, 0, {"a": F, "b": R, "c": F, "d": F}, JobStatus.RESEARCHING),
        # every step ended and one is done: on to the reporter
        ({"a": D, "b": F, "c": D}, 0, {"a": D, "b": F, "c": D, "d": F}, JobStatus.REPORTING),
        # every step failed: the job fails
        ({"a": F, "b": F}, 0, {"a": F, "b": F, "c": F, "d": F}, JobStatus.FAILED),
    ],
)
def test_scheduler(alice, sent, before, concurrency, after, job_status):
    job = researching_job(alice, PLAN, step_concurrency=concurrency)
    for step_id, status in before.items():
        JobStep.objects.filter(job=job, step_id=step_id).update(status=status)
    sent.clear()
    job_schedule(job_id=job.pk)
    job.refresh_from_db()
    assert step_statuses(job) == after
    assert job.status == job_status
    newly_queued = [sid for sid, status in after.items() if status == Q and before.get(sid) != Q]
    expected = [("step", job.pk, sid) for sid in newly_queued]
    if job_status == JobStatus.REPORTING:
        expected.append(("advance", job.pk))
    assert sent == expected


def test_scheduler_cancels_pending_steps_of_a_cancelled_job(alice, sent):
    job = researching_job(alice, PLAN)
    JobStep.objects.filter(job=job, step_id="a").update(status=StepStatus.RUNNING)
    ResearchJob.objects.filter(pk=job.pk).update(cancel_requested=True)
    job_schedule(job_id=job.pk)
    assert step_statuses(job) == {"a": R, "b": StepStatus.CANCELLED, "c": StepStatus.CANCELLED,
                                  "d": StepStatus.CANCELLED}
    job.refresh_from_db()
    assert job.status == JobStatus.RESEARCHING  # a still runs; its end will cancel the job
    JobStep.objects.filter(job=job, step_id="a").update(status=StepStatus.CANCELLED)
    job_schedule(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


# --- claims ---------------------------------------------------------------------------------------------

LATER = timedelta(seconds=60)


@pytest.mark.parametrize(
    ("status", "lease", "attempts", "claimed", "status_after"),
    [
        (StepStatus.QUEUED, None, 0, True, R),
        (StepStatus.RUNNING, -LATER, 1, True, R),  # its worker died: the lease lapsed
        (StepStatus.RUNNING, LATER, 1, False, R),  # someone holds it right now
        (StepStatus.DONE, None, 1, False, D),  # duplicate delivery
        (StepStatus.QUEUED, None, 3, False, F),  # gave up after STEP_MAX_ATTEMPTS
    ],
)
def test_step_claim(alice, sent, settings, status, lease, attempts, claimed, status_after):
    settings.STEP_MAX_ATTEMPTS = 3
    job = researching_job(alice, PLAN)
    until = timezone.now() + lease if lease is not None else None
    JobStep.objects.filter(job=job, step_id="a").update(status=status, lease_until=until, attempts=attempts)
    result = step_claim(job.pk, "a")
    assert (result is not None) == claimed
    step = JobStep.objects.get(job=job, step_id="a")
    assert step.status == status_after
    if claimed:
        assert step.attempts == attempts + 1 and step.lease_token == result[2]


def test_step_claim_of_a_cancelled_job_cancels_the_step(alice, sent):
    job = researching_job(alice, PLAN)
    ResearchJob.objects.filter(pk=job.pk).update(cancel_requested=True)
    sent.clear()
    assert step_claim(job.pk, "a") is None
    assert step_statuses(job)["a"] == StepStatus.CANCELLED
    assert sent == [("schedule", job.pk)]


@pytest.mark.parametrize(
    ("status", "lease", "attempts", "claimed", "status_after"),
    [
        (JobStatus.QUEUED, None, 0, True, JobStatus.QUEUED),
        (JobStatus.PLANNING, -LATER, 1, True, JobStatus.PLANNING),
        (JobStatus.PLANNING, LATER, 1, False, JobStatus.PLANNING),
        (JobStatus.AWAITING_REVIEW, None, 0, False, JobStatus.AWAITING_REVIEW),  # nothing to run
        (JobStatus.PLANNING, None, 3, False, JobStatus.FAILED),
    ],
)
def test_stage_claim(alice, sent, settings, status, lease, attempts, claimed, status_after):
    settings.STEP_MAX_ATTEMPTS = 3
    job = services.job_create(user=alice, question="q?", options={})
    until = timezone.now() + lease if lease is not None else None
    ResearchJob.objects.filter(pk=job.pk).update(status=status, stage_lease_until=until, stage_attempts=attempts)
    assert (stage_claim(job.pk) is not None) == claimed
    job.refresh_from_db()
    assert job.status == status_after
    if claimed:
        assert job.stage_attempts == attempts + 1 and job.stage_lease_until > timezone.now()


@pytest.mark.parametrize(
    ("status", "lease", "attempts", "claimed", "status_after"),
    [
        (OutputStatus.PENDING, None, 0, True, OutputStatus.RUNNING),
        (OutputStatus.RUNNING, LATER, 1, False, OutputStatus.RUNNING),
        (OutputStatus.DONE, None, 1, False, OutputStatus.DONE),
        (OutputStatus.PENDING, None, 3, False, OutputStatus.FAILED),
    ],
)
def test_render_claim(alice, sent, settings, status, lease, attempts, claimed, status_after):
    settings.STEP_MAX_ATTEMPTS = 3
    job = services.job_create(user=alice, question="q?", options={"outputs": "pdf"})
    until = timezone.now() + lease if lease is not None else None
    OutputRender.objects.filter(job=job).update(status=status, lease_until=until, attempts=attempts)
    assert (render_claim(job.pk, "pdf") is not None) == claimed
    assert OutputRender.objects.get(job=job).status == status_after


# --- the reaper ------------------------------------------------------------------------------------------


def test_reaper_resends_lapsed_and_lost_units_and_times_out_reviews(alice, bob, sent):
    past = timezone.now() - timedelta(hours=1)
    lapsed_stage = services.job_create(user=alice, question="q1?", options={})
    ResearchJob.objects.filter(pk=lapsed_stage.pk).update(status=JobStatus.PLANNING, stage_lease_until=past)
    held_stage = services.job_create(user=alice, question="q2?", options={})
    ResearchJob.objects.filter(pk=held_stage.pk).update(status=JobStatus.PLANNING,
                                                         stage_lease_until=timezone.now() + LATER)
    research = researching_job(bob, PLAN)
    JobStep.objects.filter(job=research, step_id="a").update(status=StepStatus.RUNNING, lease_until=past)
    JobStep.objects.filter(job=research, step_id="b").update(status=StepStatus.RUNNING,
                                                             lease_until=timezone.now() + LATER)
    review = services.job_create(user=bob, question="q3?", options={})
    job_walk(review, *TO_REVIEW)
    ResearchJob.objects.filter(pk=review.pk).update(review_deadline=past)
    rendering = services.job_create(user=bob, question="q4?", options={"outputs": "pdf,pptx"})
    ResearchJob.objects.filter(pk=rendering.pk).update(status=JobStatus.RENDERING)
    OutputRender.objects.filter(job=rendering, kind="pdf").update(status=OutputStatus.RUNNING, lease_until=past)
    sent.clear()

    counts = reap_stale_work()

    assert counts == {"stages": 1, "steps": 1, "runs": 0, "renders": 1, "reviews": 1, "documents": 0, "work_dirs": 0,
                      "edit_checks": 0, "followups": 0}
    assert ("advance", lapsed_stage.pk) in sent and ("advance", held_stage.pk) not in sent
    assert ("step", research.pk, "a") in sent and ("step", research.pk, "b") not in sent
    assert ("render", rendering.pk, "pdf") in sent and ("render", rendering.pk, "pptx") not in sent
    assert step_statuses(research)["a"] == StepStatus.QUEUED
    assert research.events.filter(type="step.requeued", payload__step="a").exists()
    review.refresh_from_db()
    assert review.status == JobStatus.CANCELLED and "not reviewed in time" in review.error


def test_reaper_leaves_a_review_before_its_deadline(alice, sent):
    job = services.job_create(user=alice, question="q?", options={})
    job_walk(job, *TO_REVIEW)
    ResearchJob.objects.filter(pk=job.pk).update(review_deadline=timezone.now() + LATER)
    assert reap_stale_work()["reviews"] == 0
    job.refresh_from_db()
    assert job.status == JobStatus.AWAITING_REVIEW


# --- long report edits checked by a worker (ReportEditCheck): leased, re-sent, capped ----------------------


def _edit_check(alice, **fields) -> ReportEditCheck:
    job = services.job_create(user=alice, question="q?", options={"engine": "offline"})
    services.report_version_create(job=job, markdown="# R\n\nText.\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    check = ReportEditCheck.objects.create(job=job, markdown="# R\n\nEdited text.\n")
    ReportEditCheck.objects.filter(pk=check.pk).update(**fields)
    check.refresh_from_db()
    return check


def test_reaper_requeues_a_check_whose_worker_died_and_resends_one_whose_message_was_lost(alice, sent):
    past = timezone.now() - timedelta(hours=1)
    lapsed = _edit_check(alice, status=OutputStatus.RUNNING, attempts=1, lease_until=past, lease_token="dead")
    held = _edit_check(alice, status=OutputStatus.RUNNING, attempts=1, lease_until=timezone.now() + LATER,
                       lease_token="alive")
    lost = _edit_check(alice, updated=past)  # pending, its message never reached a worker
    fresh = _edit_check(alice)  # pending, just sent
    sent.clear()

    assert reap_stale_work()["edit_checks"] == 2

    assert ("report_edit_check", lapsed.pk) in sent and ("report_edit_check", lost.pk) in sent
    assert ("report_edit_check", held.pk) not in sent and ("report_edit_check", fresh.pk) not in sent
    lapsed.refresh_from_db()
    assert lapsed.status == OutputStatus.PENDING and lapsed.lease_token == ""  # the dead holder's token is gone
    event = lapsed.job.events.get(type="report.check_requeued")
    assert event.payload == {"check": lapsed.pk, "attempt": 1, "reason": "its worker stopped renewing the lease"}
    sent.clear()
    assert reap_stale_work()["edit_checks"] == 0 and not sent  # re-sent once per grace, not every run


@pytest.mark.django_db(transaction=True)  # lease_kept's thread uses its own connection
def test_a_requeued_check_is_redone_once_and_saves_one_version(alice, sent):
    check = _edit_check(alice, status=OutputStatus.RUNNING, attempts=1,
                        lease_until=timezone.now() - timedelta(seconds=1), lease_token="dead")
    reap_stale_work()
    edit_check.report_edit_check_run(check_id=check.pk)
    edit_check.report_edit_check_run(check_id=check.pk)  # a duplicate delivery changes nothing
    check.refresh_from_db()
    assert (check.status, check.attempts, check.version, check.lease_token) == (OutputStatus.DONE, 2, 2, "")
    assert check.job.report_versions.count() == 2
    assert check.job.events.filter(type="report.ready", payload__version=2).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_check_lost_max_attempts_times_fails_with_the_reason(alice, sent, settings):
    settings.STEP_MAX_ATTEMPTS = 3
    check = _edit_check(alice, status=OutputStatus.PENDING, attempts=3)
    edit_check.report_edit_check_run(check_id=check.pk)
    check.refresh_from_db()
    assert check.status == OutputStatus.FAILED and check.finished_at is not None
    assert "gave up after 3 attempts" in check.error and "Save it again" in check.error
    failed = check.job.events.get(type="report.check_failed")
    assert failed.payload == {"check": check.pk, "error": check.error}
    assert check.job.report_versions.count() == 1  # nothing saved


def test_a_replaced_edit_check_holder_cannot_save_the_edit(alice, sent):
    from research.jobs.units.edit_check import _edit_check_claim
    from research.jobs.units.lease import LeaseLost
    from research.jobs.units.lease import unit_holder as oneshot_holder

    check = _edit_check(alice)
    _, old_token = _edit_check_claim(check.pk)  # type: ignore[misc]
    assert _edit_check_claim(check.pk) is None  # held by a live lease: a second delivery does nothing
    _take_over(ReportEditCheck, check.pk, "lease_until")
    assert ReportEditCheck.objects.get(pk=check.pk).lease_token == ""
    _, new_token = _edit_check_claim(check.pk)  # type: ignore[misc]
    with pytest.raises(LeaseLost), transaction.atomic():
        oneshot_holder(ReportEditCheck, check.pk, old_token, what="report edit check")
    with transaction.atomic():
        oneshot_holder(ReportEditCheck, check.pk, new_token, what="report edit check")


def _followup(alice, **fields) -> FollowUp:
    check = _edit_check(alice)  # a finished job with a report
    followup = FollowUp.objects.create(job=check.job, number=1, question="And wind power?")
    FollowUp.objects.filter(pk=followup.pk).update(**fields)
    followup.refresh_from_db()
    return followup


def test_reaper_requeues_a_followup_whose_worker_died_and_resends_one_whose_message_was_lost(alice, sent):
    past = timezone.now() - timedelta(hours=1)
    lapsed = _followup(alice, status=OutputStatus.RUNNING, attempts=1, lease_until=past, lease_token="dead")
    held = _followup(alice, status=OutputStatus.RUNNING, attempts=1, lease_until=timezone.now() + LATER)
    lost = _followup(alice, updated=past)
    sent.clear()

    assert reap_stale_work()["followups"] == 2

    assert ("followup", lapsed.pk) in sent and ("followup", lost.pk) in sent and ("followup", held.pk) not in sent
    lapsed.refresh_from_db()
    assert lapsed.status == OutputStatus.PENDING and lapsed.lease_token == ""
    event = lapsed.job.events.get(type="followup.requeued")
    assert event.payload == {"number": 1, "attempt": 1, "reason": "its worker stopped renewing the lease"}


@pytest.mark.django_db(transaction=True)
def test_a_followup_lost_max_attempts_times_fails_with_the_reason(alice, sent, settings):
    from research.jobs.units.followups import followup_run

    settings.STEP_MAX_ATTEMPTS = 3
    followup = _followup(alice, attempts=3)
    followup_run(followup_id=followup.pk)  # the claim gives up before any model call
    followup.refresh_from_db()
    assert followup.status == OutputStatus.FAILED and "Gave up after 3 attempts" in followup.error
    failed = followup.job.events.get(type="followup.failed")
    assert failed.payload == {"number": 1, "error": followup.error}


def test_a_replaced_followup_holder_cannot_write_the_answer(alice, sent):
    from research.jobs.units.followups import _followup_claim
    from research.jobs.units.lease import LeaseLost
    from research.jobs.units.lease import unit_holder as oneshot_holder

    followup = _followup(alice)
    _, old_token = _followup_claim(followup.pk)  # type: ignore[misc]
    assert _followup_claim(followup.pk) is None  # a live lease: a second delivery does nothing
    _take_over(FollowUp, followup.pk, "lease_until")
    _, new_token = _followup_claim(followup.pk)  # type: ignore[misc]
    with pytest.raises(LeaseLost), transaction.atomic():
        oneshot_holder(FollowUp, followup.pk, old_token, what="follow-up")
    with transaction.atomic():
        oneshot_holder(FollowUp, followup.pk, new_token, what="follow-up")
    assert FollowUp.objects.get(pk=followup.pk).attempts == 2


# --- fencing: a holder that was replaced writes nothing ---------------------------------------------------


def _take_over(model: type, pk: int, field: str) -> None:
    """What happens when a holder stops renewing: its lease lapses and the reaper hands the unit on."""
    model.objects.filter(pk=pk).update(**{field: timezone.now() - timedelta(seconds=1)})
    reap_stale_work()


def test_a_replaced_render_holder_cannot_record_its_outcome(alice, sent):
    from research.jobs.units.lease import LeaseLost
    from research.jobs.units.renders import RENDERS_KIND

    _render_holder = RENDERS_KIND.holder

    job = services.job_create(user=alice, question="q?", options={"outputs": "pdf"})
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.RENDERING)
    first, old_token = render_claim(job.pk, "pdf")  # type: ignore[misc]
    _take_over(OutputRender, first.pk, "lease_until")
    assert OutputRender.objects.get(pk=first.pk).lease_token == ""  # the reaper took the token away
    second, new_token = render_claim(job.pk, "pdf")  # type: ignore[misc]
    assert new_token != old_token
    with pytest.raises(LeaseLost), transaction.atomic():
        _render_holder(first, old_token)
    with transaction.atomic():
        _render_holder(second, new_token)  # the holder passes


@pytest.mark.django_db(transaction=True)  # lease_kept's thread uses its own connection
def test_a_replaced_stage_holder_cannot_end_the_stage_or_release_the_new_lease(alice, sent):
    from research.jobs.units.lease import LeaseLost, lease_kept
    from research.jobs.units.stages import stage_release, still_wanted

    job = services.job_create(user=alice, question="q?", options={})
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.PLANNING)
    _, old_token = stage_claim(job.pk)  # type: ignore[misc]
    ResearchJob.objects.filter(pk=job.pk).update(stage_lease_until=timezone.now() - timedelta(seconds=1))
    _, new_token = stage_claim(job.pk)  # type: ignore[misc]
    with lease_kept(ResearchJob, job.pk, "stage_lease_until", token_field="stage_lease_token",
                    token=old_token) as lease:
        with pytest.raises(LeaseLost), transaction.atomic():
            still_wanted(job.pk)  # inside the transaction that would write the plan / the report
        assert lease.lost.is_set()
    with lease_kept(ResearchJob, job.pk, "stage_lease_until", token_field="stage_lease_token",
                    token=new_token), transaction.atomic():
        still_wanted(job.pk)
    stage_release(job.pk, old_token)
    job.refresh_from_db()
    assert job.stage_lease_token == new_token and job.stage_lease_until is not None
    stage_release(job.pk, new_token)
    job.refresh_from_db()
    assert job.stage_lease_token == "" and job.stage_lease_until is None


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_notices_a_lost_lease_and_the_next_checkpoint_stops(alice, sent, settings):
    from research.jobs.units.context import JobContext
    from research.jobs.units.lease import LeaseLost, lease_kept

    settings.STEP_LEASE_S = 1  # renewals every 0.25 s
    job = researching_job(alice, [PlanStep(id="a", title="A")])
    claimed = step_claim(job.pk, "a")
    assert claimed is not None
    _, step, token = claimed
    with lease_kept(JobStep, step.pk, "lease_until", token_field="lease_token", token=token) as lease:
        time.sleep(0.6)
        assert not lease.lost.is_set()
        before = JobStep.objects.get(pk=step.pk).lease_until
        _take_over(JobStep, step.pk, "lease_until")  # the step is queued again, its token gone
        deadline = time.monotonic() + 10
        while not lease.lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lease.lost.is_set(), "the renewal thread did not notice the takeover"
        with pytest.raises(LeaseLost):
            JobContext(job, step_id="a").check_cancelled()
    row = JobStep.objects.get(pk=step.pk)
    assert row.status == StepStatus.QUEUED and row.lease_until > before  # the reaper's grace, not a renewal


@pytest.mark.django_db(transaction=True)
def test_a_page_another_step_fetched_is_still_listed_as_read_by_this_step(alice, sent):
    """Each job fetches a URL once; a second step that reads it gets the stored text and still says it
    read the page, so its card lists it (steps run in parallel: without this, a card could list no page
    while its finding quotes three)."""
    from research.jobs.models import Source
    from research.jobs.units.context import JobContext

    job = researching_job(alice, [PlanStep(id="a", title="A"), PlanStep(id="b", title="B")])
    url = "https://pages.example/solar.html"
    Source.objects.create(job=job, number=1, url=url, title="Solar", kind="web", text="Solar is cheap.",
                          text_hash="x", step_id="a")
    ref = JobContext(job, step_id="b").fetch(url)  # no network: the stored page
    assert ref.number == 1 and ref.text == "Solar is cheap."
    reads = [e.payload for e in job.events.filter(type="step.activity") if e.payload.get("kind") == "fetch"]
    assert [(r["url"], r.get("step")) for r in reads] == [(url, "b")], reads
    assert Source.objects.filter(job=job).count() == 1  # read again, not stored again
