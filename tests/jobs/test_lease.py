"""The one lease protocol (research/jobs/units/lease.py) as a new kind of unit sees it.

A kind written here, the way docs/architecture.md ("Adding a new kind of unit") says, over an existing table
(FollowUp, so no migration is needed): one `OneShotKind` subclass. The reaper finds it through its registry
(`reaper.UNIT_KINDS`), and `unit_run` gives it the claim / holder / outcome rules every unit has.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from research.jobs import dispatch, services
from research.jobs.locks import job_number_next
from research.jobs.models import FollowUp, JobStatus, OutputStatus, ReportVersion, ResearchJob
from research.jobs.units import reaper
from research.jobs.units.lease import Claim, LeaseLost, OneShotKind, unit_run


class _Probe(OneShotKind[FollowUp]):
    """A new kind of unit: answers a follow-up with whatever its work returns; sends go to a list."""

    model = FollowUp
    name = "probes"
    requeued_type = "followup.requeued"

    def __init__(self) -> None:
        self.sent: list[int] = []

    def requeued_payload(self, unit: FollowUp) -> dict[str, Any]:
        return {"number": unit.number}

    def give_up_reason(self, unit: FollowUp) -> str:
        return f"gave up after {unit.attempts} attempts"

    def succeed(self, unit: FollowUp, value: Any) -> None:
        FollowUp.objects.filter(pk=unit.pk).update(**self.ended_fields(OutputStatus.DONE, answer=value))

    def fail(self, unit: FollowUp, error: str) -> None:
        FollowUp.objects.filter(pk=unit.pk).update(**self.ended_fields(OutputStatus.FAILED, error=error))

    def send(self, unit: FollowUp) -> None:
        self.sent.append(unit.pk)


@pytest.fixture
def sent(monkeypatch) -> list[tuple]:
    units: list[tuple] = []
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: units.append(a))
    return units


def _unit(user, number: int = 1, **fields: Any) -> FollowUp:
    job = services.job_create(user=user, question=f"How do heat pumps work ({number})?", options={})
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    unit = FollowUp.objects.create(job=job, number=number, question="And wind power?")
    FollowUp.objects.filter(pk=unit.pk).update(**fields)
    unit.refresh_from_db()
    return unit


def test_the_reaper_requeues_a_kind_it_finds_in_the_registry(alice, sent, monkeypatch):
    probe = _Probe()
    monkeypatch.setattr(reaper, "UNIT_KINDS", {"probes": probe})  # the registry is all the reaper walks
    past = timezone.now() - timedelta(hours=1)
    lapsed = _unit(alice, status=OutputStatus.RUNNING, attempts=1, lease_until=past, lease_token="dead")
    held = _unit(alice, status=OutputStatus.RUNNING, attempts=1, lease_until=timezone.now() + timedelta(minutes=1),
                 lease_token="alive")
    lost = _unit(alice, updated=past)  # pending: its message never reached a worker
    fresh = _unit(alice)  # pending, just sent

    counts = reaper.reap_stale_work()

    assert counts["probes"] == 2 and "followups" not in counts
    assert sorted(probe.sent) == sorted([lapsed.pk, lost.pk])
    lapsed.refresh_from_db()
    assert (lapsed.status, lapsed.lease_token) == (OutputStatus.PENDING, "")  # the dead holder's token is gone
    event = lapsed.job.events.get(type="followup.requeued")
    assert event.payload == {"number": 1, "attempt": 1, "reason": "its worker stopped renewing the lease"}
    assert FollowUp.objects.get(pk=held.pk).lease_token == "alive"
    assert FollowUp.objects.get(pk=fresh.pk).status == OutputStatus.PENDING
    probe.sent.clear()
    assert reaper.reap_stale_work()["probes"] == 0 and not probe.sent  # re-sent once per grace


@pytest.mark.django_db(transaction=True)  # lease_kept's thread uses its own connection
def test_a_unit_run_by_the_runner_is_done_once_and_a_duplicate_delivery_does_nothing(alice, sent):
    probe = _Probe()
    unit = _unit(alice)
    calls: list[int] = []

    def work(claim: Claim[FollowUp]) -> str:
        calls.append(claim.unit.pk)
        assert FollowUp.objects.get(pk=claim.unit.pk).lease_token == claim.token  # it holds the lease
        return "the answer"

    unit_run(probe, work, pk=unit.pk)
    unit_run(probe, work, pk=unit.pk)  # a duplicate delivery

    assert calls == [unit.pk]
    unit.refresh_from_db()
    assert (unit.status, unit.answer, unit.attempts, unit.lease_token) == (OutputStatus.DONE, "the answer", 1, "")


@pytest.mark.django_db(transaction=True)
def test_a_replaced_holder_run_by_the_runner_writes_nothing(alice, sent):
    probe = _Probe()
    unit = _unit(alice)
    new_holder: list[Claim[FollowUp]] = []

    def slow_work(claim: Claim[FollowUp]) -> str:
        # This worker stalls past its lease: the reaper hands the unit on and another worker claims it.
        FollowUp.objects.filter(pk=claim.unit.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
        assert probe.requeue_stale(timezone.now()) == 1
        taken = probe.claim(pk=claim.unit.pk)
        assert taken is not None and taken.token != claim.token
        new_holder.append(taken)
        return "the stale answer"

    unit_run(probe, slow_work, pk=unit.pk)

    unit.refresh_from_db()
    assert unit.status == OutputStatus.RUNNING and unit.answer == ""  # the old holder wrote no outcome
    assert unit.lease_token == new_holder[0].token and unit.attempts == 2
    # The new holder's outcome is the one written; the old token fails the holder check.
    assert probe.finish(unit.job_id, unit, new_holder[0].token, _done("the answer"))
    with pytest.raises(LeaseLost), transaction.atomic():
        probe.holder(unit, new_holder[0].token)  # its outcome took the token away too: nothing writes twice
    unit.refresh_from_db()
    assert (unit.status, unit.answer) == (OutputStatus.DONE, "the answer")


@pytest.mark.django_db(transaction=True)
def test_a_failure_under_the_runner_is_written_as_a_failure_with_its_reason(alice, sent):
    probe = _Probe()
    unit = _unit(alice)

    def broken(claim: Claim[FollowUp]) -> str:
        raise ValueError("the search provider refused the key")

    unit_run(probe, broken, pk=unit.pk)

    unit.refresh_from_db()
    assert (unit.status, unit.error, unit.lease_token) == (OutputStatus.FAILED, "the search provider refused the key",
                                                            "")
    assert unit.finished_at is not None


def test_a_claim_after_max_attempts_gives_up_with_the_kinds_reason(alice, sent, settings):
    settings.STEP_MAX_ATTEMPTS = 3
    probe = _Probe()
    unit = _unit(alice, attempts=3)
    assert probe.claim(pk=unit.pk) is None
    unit.refresh_from_db()
    assert (unit.status, unit.error) == (OutputStatus.FAILED, "gave up after 3 attempts")


def _done(value: Any):
    from research.jobs.units.lease import Outcome

    return Outcome("done", value=value)


# --- per-job numbering -------------------------------------------------------------------------------------


def test_per_job_numbers_count_from_one_for_each_job(alice, sent):
    first = services.job_create(user=alice, question="How do heat pumps work?", options={})
    second = services.job_create(user=alice, question="How do wind turbines work?", options={})
    numbers = [services.report_version_create(job=job, markdown="# R\n", author="reporter").number
               for job in (first, second, first, first, second)]
    assert numbers == [1, 1, 2, 3, 2]
    with transaction.atomic():
        assert job_number_next(job_id=first.pk, model=ReportVersion) == 4


@pytest.mark.django_db(transaction=True)  # outside any transaction
def test_the_numbering_helper_refuses_to_run_outside_a_transaction(alice, sent):
    job = services.job_create(user=alice, question="How do heat pumps work?", options={})
    with pytest.raises(RuntimeError, match="inside the transaction"):
        job_number_next(job_id=job.pk, model=ReportVersion)
