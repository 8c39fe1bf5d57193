"""The one lease protocol of a job's leased units: plan steps (JobStep) and heavy mode's runs (StepRun).

Both are `models.LeasedWork` rows and go through the same three moves (docs/operations.md, "Takeover"):

- `claim`: a no-op for an ended unit, one under a live lease, or one its kind says is waiting. A unit of a
  cancelled (or no longer researching) job ends `cancelled`; one already claimed STEP_MAX_ATTEMPTS times
  ends `failed` ("gave up after …"). Otherwise it is `running` with one more attempt, a fresh fencing
  token and a lease of STEP_LEASE_S (which `leases.lease_kept` renews while the unit works).
- `finish`: the outcome is written only where the row still carries the holder's token and is running.
- `requeue_stale` (the reaper): a unit whose lease lapsed goes back to `queued` without its token (its old
  holder can neither renew nor finish any more) and its message is sent again.

Locking order: every transaction here takes the job row first, then the rows the kind names
(`lock_related`: a run's step), then the unit's own row. The scheduler, the claims and `event_emit` take
the job row first too, so no two of them wait on each other in a cycle (PostgreSQL would break such a
deadlock by aborting one). What differs between the kinds (their events, what else they lock, what follows
an end) are the hooks of `LeasedUnits`, implemented in steps.py and runs.py.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from research.jobs.events import event_emit
from research.jobs.models import JobStatus, LeasedWork, ResearchJob, StepStatus
from research.jobs.units.common import now, queue_grace
from research.jobs.units.leases import lease_deadline

ENDED = (StepStatus.DONE, StepStatus.FAILED, StepStatus.CANCELLED)

W = TypeVar("W", bound=LeasedWork)


def job_lock(job_id: int) -> None:
    """Take the job row's lock in this transaction: the first lock of every unit's write."""
    ResearchJob.objects.select_for_update().filter(pk=job_id).values_list("pk").first()


class LeasedUnits(Generic[W]):
    """One kind of leased unit under the protocol; subclasses fill in the hooks."""

    model: type[W]
    kind: str  # the events' prefix: `<kind>.started`, `.completed`, `.failed`, `.cancelled`, `.requeued`

    # --- hooks ------------------------------------------------------------------------------------------

    def queryset(self) -> QuerySet[W]:
        return self.model._default_manager.all()

    def payload(self, unit: W) -> dict[str, Any]:
        """What names the unit in each of its events."""
        raise NotImplementedError

    def lock_related(self, unit: W) -> None:
        """Lock the rows (after the job row) that an end of this unit reads or writes besides its own."""

    def waiting(self, unit: W) -> bool:
        """Neither claimable nor ended (a heavy step waiting on its runs): a claim is a no-op."""
        return False

    def started(self, job_id: int, unit: W) -> None:
        """Emit the event of a successful claim (`unit.attempts` counts it already)."""
        raise NotImplementedError

    def completed(self, unit: W, fields: dict[str, Any]) -> dict[str, Any]:
        """What `<kind>.completed` says beyond `payload`, from the outcome's fields."""
        return {}

    def after_end(self, job_id: int, unit: W, *, written: bool) -> None:
        """In the transaction that ended the unit (`written`) or found its lease gone: what comes next."""

    def send(self, unit: W) -> None:
        """Queue the unit's message (after commit)."""
        raise NotImplementedError

    # --- the protocol -----------------------------------------------------------------------------------

    def claim(self, job_id: int, **lookup: Any) -> tuple[ResearchJob, W, str] | None:
        """Claim the job's unit found by `lookup`; None when there is nothing to run (see the module doc)."""
        with transaction.atomic():
            # The job row's lock first (an UPDATE takes it): serialises with the scheduler and event_emit.
            ResearchJob.objects.filter(pk=job_id).update(updated=now())
            job = ResearchJob.objects.filter(pk=job_id).first()
            unit = self.queryset().filter(job_id=job_id, **lookup).first()
            if job is None or unit is None or unit.status in ENDED:
                return None  # a duplicate delivery is a no-op
            if unit.status == StepStatus.RUNNING and unit.lease_until and unit.lease_until > now():
                return None  # someone holds it right now
            if self.waiting(unit):
                return None
            if job.status != JobStatus.RESEARCHING or job.cancel_requested:
                self._end_unclaimed(job_id, unit, status=StepStatus.CANCELLED, error="cancelled")
                return None
            if unit.attempts >= settings.STEP_MAX_ATTEMPTS:
                self._end_unclaimed(job_id, unit, status=StepStatus.FAILED, error=(
                    f"gave up after {unit.attempts} attempts: the worker running it was lost each time"))
                return None
            token = uuid.uuid4().hex
            self.model._default_manager.filter(pk=unit.pk).update(
                status=StepStatus.RUNNING, attempts=unit.attempts + 1, lease_token=token,
                lease_until=now() + lease_deadline(), started_at=now(), error="")
            unit.attempts += 1
            self.started(job_id, unit)
            return job, unit, token

    def finish(self, job_id: int, unit: W, token: str, fields: dict[str, Any]) -> bool:
        """Write the outcome only if `token` still holds the lease (the reaper may have handed the unit on)."""
        with transaction.atomic():
            job_lock(job_id)
            self.lock_related(unit)
            n = self.model._default_manager.filter(pk=unit.pk, lease_token=token, status=StepStatus.RUNNING).update(
                finished_at=now(), lease_until=None, **fields)
            if n:
                self._ended_event(job_id, unit, fields)
            self.after_end(job_id, unit, written=bool(n))
        return bool(n)

    def requeue_stale(self, at: datetime) -> int:
        """For the reaper: re-queue the units whose worker stopped renewing the lease or whose message was lost."""
        count = 0
        for unit in self.queryset().filter(status__in=[StepStatus.RUNNING, StepStatus.QUEUED], lease_until__lt=at,
                                           job__status=JobStatus.RESEARCHING):
            with transaction.atomic():
                job_lock(unit.job_id)
                self.lock_related(unit)
                # The token goes with the lease: a stalled holder can no longer renew it or write an outcome.
                n = self.model._default_manager.filter(
                    pk=unit.pk, status=unit.status, lease_until=unit.lease_until).update(
                    status=StepStatus.QUEUED, lease_until=at + queue_grace(), lease_token="")
                if n:
                    count += 1
                    if unit.status == StepStatus.RUNNING:
                        event_emit(job_id=unit.job_id, type=f"{self.kind}.requeued",
                                   payload={**self.payload(unit), "attempt": unit.attempts,
                                            "reason": "its worker stopped renewing the lease"})
                    self.send(unit)
        return count

    def _end_unclaimed(self, job_id: int, unit: W, **fields: Any) -> None:
        """End a unit its claim will not run (inside the claim's transaction: the job row is locked)."""
        self.lock_related(unit)
        self.model._default_manager.filter(pk=unit.pk).update(finished_at=now(), lease_until=None, **fields)
        self._ended_event(job_id, unit, fields)
        self.after_end(job_id, unit, written=True)

    def _ended_event(self, job_id: int, unit: W, fields: dict[str, Any]) -> None:
        payload = self.payload(unit)
        status = fields.get("status")
        if status == StepStatus.DONE:
            event_emit(job_id=job_id, type=f"{self.kind}.completed",
                       payload={**payload, **self.completed(unit, fields)})
        elif status == StepStatus.CANCELLED:
            event_emit(job_id=job_id, type=f"{self.kind}.cancelled", payload=payload)
        else:
            event_emit(job_id=job_id, type=f"{self.kind}.failed", payload={**payload, "error": fields.get("error", "")})
