"""Heavy mode's scheduling rules in-process: fan-out into runs, leases, the synthesis hand-off, lost runs.

The broker is replaced by a list of the units that would be sent; `drain` runs them inline (the real
worker versions are tests/integration/test_heavy.py and tests/faults/test_heavy_faults.py).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from research.agents.types import Plan, PlanStep
from research.jobs import services
from research.jobs.models import JobStatus, JobStep, ResearchJob, StepRun, StepStatus
from research.jobs.selectors import job_summary
from research.jobs.units import runs, steps
from research.jobs.units.reaper import reap_stale_work
from tests.support.inline_units import drain, inline_broker
from tests.support.jobs import TO_REVIEW, job_walk


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    return inline_broker(monkeypatch)


# Renders and other units these tests do not follow are dropped, as before.
KINDS = ("advance", "schedule", "step", "run")


def researching_job(user, plan_steps: list[PlanStep], question: str = "What limits grid-scale battery storage?",
                    **options) -> ResearchJob:
    job = services.job_create(user=user, question=question,
                              options={"engine": "offline", **options})
    job_walk(job, *TO_REVIEW)
    version = services.plan_version_create(job=job, plan=Plan(title="P", steps=plan_steps), author="planner")
    services.plan_start(job=job, version=version)
    job.refresh_from_db()
    return job


def events(job: ResearchJob, type_: str) -> list[dict]:
    return [e.payload for e in job.events.filter(type=type_).order_by("seq")]


STEPS = [PlanStep(id="a", title="Challenges and obstacles", description="grid-scale battery storage challenges"),
         PlanStep(id="p", title="Numbers", step_type="processing", depends_on=["a"])]


def test_a_ready_heavy_step_fans_out_into_k_runs_steered_apart(alice, sent):
    job = researching_job(alice, STEPS, depth="heavy", runs=3)
    sent.clear()
    steps.job_schedule(job_id=job.pk)
    step = JobStep.objects.get(job=job, step_id="a")
    assert step.status == StepStatus.RUNNING and step.lease_until is None  # waiting on its runs
    assert sent == [("run", job.pk, "a", 0), ("run", job.pk, "a", 1), ("run", job.pk, "a", 2)]
    rows = list(StepRun.objects.filter(step=step).order_by("index"))
    assert [r.status for r in rows] == [StepStatus.QUEUED] * 3
    variants = [r.variant for r in rows]
    assert len({v["emphasis"] for v in variants}) == 3
    assert len({v["opening_query"] for v in variants}) == 3
    assert len({v["seed"] for v in variants}) == 3
    assert events(job, "step.started")[-1]["runs"] == 3
    assert [e["run"] for e in events(job, "run.queued")] == [0, 1, 2]
    # A waiting step is not claimed by a stray step message.
    assert steps.step_claim(job.pk, "a") is None


def test_standard_jobs_and_processing_steps_make_no_runs(alice, sent):
    job = researching_job(alice, [PlanStep(id="a", title="A")])
    steps.job_schedule(job_id=job.pk)
    assert not StepRun.objects.filter(job=job).exists()
    assert ("step", job.pk, "a") in sent


def test_depth_options_are_checked(alice, sent):
    from django.core.exceptions import ValidationError

    for bad in ({"depth": "deep"}, {"depth": "heavy", "runs": 6}, {"depth": "heavy", "runs": 0},
                {"depth": "heavy", "runs": "two"}):
        with pytest.raises(ValidationError):
            services.job_create(user=alice, question="q", options=bad)
    job = services.job_create(user=alice, question="q", options={"depth": "heavy"})
    assert job.options["depth"] == "heavy" and job.options["runs"] == 3
    job = services.job_create(user=alice, question="q", options={"depth": "standard", "runs": 4})
    assert job.options["runs"] == 1


def test_a_heavy_step_with_nothing_on_the_subject_says_so_and_the_job_finishes(alice, sent, live_settings):
    # The test site has no page on solid-state batteries, only battery pages of other kinds (near misses):
    # the runs read them and the finding says no source was found, as a standard step does. A failed step
    # here would be a failure shown where there is none; a quote from a near miss, a neighbour's subject.
    job = researching_job(alice, STEPS, question="What limits solid-state batteries?", depth="heavy", runs=2)
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    step = JobStep.objects.get(job=job, step_id="a")
    assert step.status == StepStatus.DONE and "No source found" in step.result_md
    assert [r.status for r in StepRun.objects.filter(step=step)] == [StepStatus.DONE] * 2


def test_a_heavy_offline_job_runs_end_to_end_in_process(alice, sent, live_settings):
    job = researching_job(alice, STEPS, depth="heavy", runs=2)
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    step = JobStep.objects.get(job=job, step_id="a")
    assert [r.status for r in StepRun.objects.filter(step=step)] == [StepStatus.DONE] * 2
    assert step.result["notes"]["synthesis"] is True
    completed = [e for e in events(job, "step.completed") if e["step"] == "a"][0]
    assert completed["synthesized"] and completed["runs"] == 2 and completed["lost"] == 0
    assert events(job, "step.synthesizing")[0]["step"] == "a"
    # Runs' activity carries the run index; the processing step ran once, without runs.
    runs_seen = {e["run"] for e in events(job, "step.activity") if e.get("kind") == "search" and "run" in e}
    assert runs_seen == {0, 1}
    assert not StepRun.objects.filter(step__step_id="p", job=job).exists()
    summary = job_summary(job=job)
    by_id = {s["id"]: s for s in summary["steps"]}
    assert [r["status"] for r in by_id["a"]["runs"]] == ["done", "done"]
    assert by_id["p"]["runs"] == []
    # Every citation of the finding is a source the runs registered.
    from research.report.citations import citation_numbers

    registered = set(job.sources.values_list("number", flat=True))
    assert set(citation_numbers(step.result_md)) <= registered and citation_numbers(step.result_md)


def test_a_lost_run_is_requeued_by_the_reaper_and_the_step_still_synthesizes(alice, sent, live_settings, settings):
    job = researching_job(alice, STEPS[:1], depth="heavy", runs=3)
    # Run 1's message is "lost" with its worker: claimed, then never finished.
    held = drain(sent, kinds=KINDS, skip=lambda u: u[0] == "run" and u[3] == 1)
    assert held == [("run", job.pk, "a", 1)]
    claimed = runs.run_claim(job.pk, "a", 1)
    assert claimed is not None
    step = JobStep.objects.get(job=job, step_id="a")
    assert step.status == StepStatus.RUNNING  # two runs done, one running: no synthesis yet
    StepRun.objects.filter(step=step, index=1).update(lease_until=timezone.now() - timedelta(seconds=1))
    counts = reap_stale_work()
    assert counts["runs"] == 1
    assert events(job, "run.requeued")[0]["run"] == 1
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    run1 = StepRun.objects.get(step=step, index=1)
    assert run1.status == StepStatus.DONE and run1.attempts == 2
    assert [e["run"] for e in events(job, "run.completed")].count(0) == 1  # the others ran once


def test_a_run_lost_every_time_is_reported_and_the_step_merges_the_rest(alice, sent, live_settings, settings):
    settings.STEP_MAX_ATTEMPTS = 1
    job = researching_job(alice, STEPS[:1], depth="heavy", runs=2)
    drain(sent, kinds=KINDS, skip=lambda u: u[0] == "run" and u[3] == 0)
    assert runs.run_claim(job.pk, "a", 0) is not None
    StepRun.objects.filter(job=job, index=0).update(lease_until=timezone.now() - timedelta(seconds=1))
    reap_stale_work()
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    failed = events(job, "run.failed")
    assert failed[0]["run"] == 0 and "gave up after 1 attempts" in failed[0]["error"]
    completed = [e for e in events(job, "step.completed") if e["step"] == "a"][0]
    assert completed["runs"] == 1 and completed["lost"] == 1


def test_every_run_failing_fails_the_step_with_their_reasons(alice, sent, settings):
    settings.SEARXNG_URL = "http://127.0.0.1:9/"  # nothing answers: every run finds no source
    job = researching_job(alice, STEPS[:1], depth="heavy", runs=2)
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    step = JobStep.objects.get(job=job, step_id="a")
    assert step.status == StepStatus.FAILED and step.error.startswith("every run failed (run 1:")
    assert job.status == JobStatus.FAILED


def test_retry_keeps_done_runs_and_redoes_the_others(alice, sent, live_settings):
    job = researching_job(alice, STEPS[:1], depth="heavy", runs=2)
    drain(sent, kinds=KINDS)
    step = JobStep.objects.get(job=job, step_id="a")
    # Pretend run 1 failed and the job failed with it.
    StepRun.objects.filter(step=step, index=1).update(status=StepStatus.FAILED, error="boom")
    JobStep.objects.filter(pk=step.pk).update(status=StepStatus.FAILED)
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.FAILED)
    job.refresh_from_db()
    sent.clear()
    services.job_retry(job=job)
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    rows = {r.index: r for r in StepRun.objects.filter(step=step)}
    assert rows[0].attempts == 1 and rows[1].attempts == 1 and rows[1].status == StepStatus.DONE


def test_cancelling_a_heavy_job_cancels_its_queued_runs(alice, sent):
    job = researching_job(alice, STEPS[:1], depth="heavy", runs=2)
    steps.job_schedule(job_id=job.pk)
    services.job_cancel(job=job)
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert set(StepRun.objects.filter(job=job).values_list("status", flat=True)) == {StepStatus.CANCELLED}


def test_a_chinese_heavy_offline_job_synthesizes_chinese_findings(alice, sent, live_settings):
    job = services.job_create(user=alice, question="中国新能源汽车销量增长的原因是什么？",
                              options={"engine": "offline", "auto_accept": True, "max_steps": 2, "depth": "heavy",
                                       "runs": 2})
    drain(sent, kinds=KINDS)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    assert job.locale == "zh-CN"
    for step in JobStep.objects.filter(job=job):
        assert step.result["notes"]["synthesis"] and step.result_md.strip()
        emphases = [r.variant["emphasis"] for r in StepRun.objects.filter(step=step)]
        assert all(any("\u4e00" <= ch <= "\u9fff" for ch in e) for e in emphases)
