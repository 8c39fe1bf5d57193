"""Fair share under real row locks (issue 34): workers racing to start an account's queued jobs take its
last running place exactly once. `make test` runs this package on PostgreSQL, where production runs."""

from __future__ import annotations

import itertools

import pytest

from research.jobs import dispatch, services
from research.jobs.models import JobStatus, ResearchJob
from research.jobs.units import stages
from tests.integration.test_db_locks import RACERS, race

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_racing_claims_of_an_accounts_queued_jobs_fill_its_last_place_once(alice, monkeypatch, settings,
                                                                            redis_server):
    settings.FAIR_USER_RUNNING_JOBS = 3
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    running = [services.job_create(user=alice, question=f"Running {n}?", options={}) for n in range(2)]
    ResearchJob.objects.filter(pk__in=[j.pk for j in running]).update(status=JobStatus.RESEARCHING)
    queued = [services.job_create(user=alice, question=f"Queued {n}?", options={}) for n in range(RACERS)]
    ids = itertools.count()
    results = race(lambda: stages.stage_claim(queued[next(ids)].pk))
    assert len([r for r in results if r is not None]) == 1, results
    assert ResearchJob.objects.filter(owner=alice, status=JobStatus.COORDINATING).count() == 1
    # The one that started is the oldest: places go in the order the jobs were created.
    assert ResearchJob.objects.get(pk=queued[0].pk).status == JobStatus.COORDINATING
