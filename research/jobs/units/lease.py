"""The one lease protocol of every unit of work: a job's stage, a plan step, a heavy step's run, a render, a
report edit's check, a follow-up's answer (docs/operations.md, "Takeover"; docs/architecture.md, "Adding a
new kind of unit").

A unit is a row with a lease (`models.LeasedUnit`: attempts, lease_until, lease_token; the stage lease is the
same three columns on `ResearchJob`, named by its `LEASE`). A kind of unit is a `UnitKind` whose hooks say
what differs (its events, what else it locks, what follows an end); the moves are written here, once:

- `claim`: a no-op for an ended unit, one under a live lease, or one its kind says is waiting; a unit its
  kind refuses (a step of a cancelled job) is ended by the kind; one claimed STEP_MAX_ATTEMPTS times already
  is given up (failed, saying why). Otherwise it is running with one more attempt, a fresh fencing token and
  a lease of STEP_LEASE_S.
- the heartbeat (`lease_kept`): a side thread renews the lease every quarter of it while the unit works;
  renewals and outcomes are fenced by the token, so a holder that was too slow (and replaced) can neither
  extend the new holder's lease nor write an outcome (`Lease.lost`, `LeaseLost`).
- `finish`: the outcome is written only where the row still carries the holder's token (`holder`).
- `requeue_stale` (the reaper): a running unit whose lease lapsed is queued again without its token, and its
  message is sent again; one whose message was lost is sent again.
- `unit_run`: claim → lease → work → holder check → outcome, for every kind.

Locking order: every transaction here takes the job row first (`locks.job_lock`), then the rows the kind
names (`lock_related`: a run's step), then the unit's own row. The scheduler and `event_emit` take the job
row first too, so no two of them wait on each other in a cycle. The one exception is a one-shot unit's
claim (`OneShotKind.claim_lock`), which locks only its own row, as it always has.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import datetime, timedelta
from typing import Any, Generic, Literal, TypeVar

from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from research.agents.types import BudgetExceeded, JobCancelled, StepResult
from research.jobs.events import event_emit
from research.jobs.locks import job_lock
from research.jobs.models import JobStatus, LeasedWork, OneShotUnit, OutputStatus, ResearchJob, StepStatus
from research.jobs.units.common import jsonable, queue_grace, short

logger = logging.getLogger(__name__)

RENEWALS_PER_LEASE = 4  # three renewals may be missed (a busy database, a stalled thread) before it lapses
LOST = "its worker stopped renewing the lease"  # the reason a `<kind>.requeued` event gives


class LeaseLost(Exception):
    """This unit's lease was handed to another holder: stop, write nothing."""


# --- the heartbeat ----------------------------------------------------------------------------------------


@dataclass
class Lease:
    model: type[Model]
    pk: int
    field: str
    token_field: str = ""
    token: str = ""
    lost: threading.Event = dc_field(default_factory=threading.Event)


_current: ContextVar[Lease | None] = ContextVar("research_current_lease", default=None)


def lease_deadline(seconds: float | None = None) -> timedelta:
    return timedelta(seconds=seconds if seconds is not None else settings.STEP_LEASE_S)


def lease_current() -> Lease | None:
    """The lease the running unit holds (inside lease_kept), if any."""
    return _current.get()


def lease_check(model: type[Model], pk: int) -> None:
    """Raise LeaseLost if this unit holds a fenced lease on (model, pk) and the row no longer carries its token.

    Call it inside the transaction that writes the unit's outcome, after locking the row (select_for_update),
    so a takeover cannot slip in between the check and the write.
    """
    lease = _current.get()
    if lease is None or not lease.token_field or lease.model is not model or lease.pk != pk:
        return
    held = model.objects.filter(pk=pk, **{lease.token_field: lease.token}).exists()  # type: ignore[attr-defined]
    if not held:
        lease.lost.set()
        raise LeaseLost(f"the lease on {model.__name__} {pk} passed to another worker")


@contextmanager
def lease_kept(model: type[Model], pk: int, field: str, *, token_field: str = "", token: str = "") -> Iterator[Lease]:
    """Renew `field` on the row every lease/4 seconds from a side thread until the block ends.

    With `token_field`, only a row that still carries `token` is renewed; when none is, the lease was
    handed on: renewals stop and `Lease.lost` is set.
    """
    lease = Lease(model, pk, field, token_field, token)
    stop = threading.Event()
    interval = max(0.25, settings.STEP_LEASE_S / RENEWALS_PER_LEASE)

    def renew() -> None:
        try:
            while not stop.wait(interval):
                qs = model.objects.filter(pk=pk)  # type: ignore[attr-defined]
                if token_field:
                    qs = qs.filter(**{token_field: token})
                try:
                    renewed = qs.update(**{field: timezone.now() + lease_deadline()})
                except DatabaseError:
                    # A busy database must not end the renewals (the unit would look dead): try next round.
                    logger.warning("could not renew the lease of %s %s", model.__name__, pk, exc_info=True)
                    close_old_connections()
                    continue
                if token_field and not renewed:
                    logger.warning("the lease of %s %s passed to another worker; this holder stops renewing",
                                   model.__name__, pk)
                    lease.lost.set()
                    return
        finally:
            connection.close()

    thread = threading.Thread(target=renew, name=f"lease-{model.__name__}-{pk}", daemon=True)
    reset = _current.set(lease)
    thread.start()
    try:
        yield lease
    finally:
        _current.reset(reset)
        stop.set()
        thread.join(timeout=5)
        close_old_connections()


def unit_holder(model: type[Model], pk: int, token: str, *, what: str = "", **match: Any) -> None:
    """Raise LeaseLost unless the row still carries this holder's `token` (and `match`); locks the row.

    Call it inside the transaction that writes the outcome, so a takeover cannot slip in between.
    """
    fields = model.LEASE  # type: ignore[attr-defined]
    if not model._default_manager.select_for_update().filter(pk=pk, **{fields.token: token}, **match).exists():
        raise LeaseLost(f"{what or f'{model.__name__} {pk}'} passed to another worker")


# --- the protocol -----------------------------------------------------------------------------------------

U = TypeVar("U", bound=Model)


@dataclass
class Claim(Generic[U]):
    """What a successful claim hands its holder: the job (read under its lock), the unit and the token."""

    job: ResearchJob
    unit: U
    token: str
    scratch: Any = None  # what the kind's `scope` set up for the work (a render's work folder)

    @property
    def job_id(self) -> int:
        return self.job.pk


@dataclass
class Outcome:
    """How the work ended: `done` with its value, `cancelled` (the job was) or `failed` with the exception."""

    status: Literal["done", "cancelled", "failed"]
    value: Any = None
    error: BaseException | None = None


class UnitKind(Generic[U]):
    """One kind of unit under the protocol; subclasses fill in the hooks and register it in reaper.UNIT_KINDS."""

    model: type[U]
    name: str  # the reaper's count of it
    ended: tuple[str, ...] = ()
    running: str = StepStatus.RUNNING  # "running" in both status vocabularies
    job_field = "job_id"  # how the unit names its job
    # The claim's first lock: the job row with an UPDATE of `updated` ("touch", see locks.job_lock), the job
    # row without one ("job"), or only the unit's own row ("unit": a one-shot unit, see OneShotKind).
    claim_lock: Literal["touch", "job", "unit"] = "touch"
    cancellable = False  # JobCancelled ends the unit `cancelled`; otherwise it is a failure like any other
    expected: tuple[type[BaseException], ...] = ()  # failures logged without a traceback

    # --- hooks ------------------------------------------------------------------------------------------

    def queryset(self) -> QuerySet[U]:
        return self.model._default_manager.all()

    def describe(self, unit: U) -> str:
        """Names the unit in logs and in LeaseLost."""
        return f"{self.model.__name__} {unit.pk}"

    def is_ended(self, unit: U) -> bool:
        return getattr(unit, "status", "") in self.ended

    def is_live(self, unit: U, at: datetime) -> bool:
        """Held right now by a live holder."""
        until = getattr(unit, self.model.LEASE.until)  # type: ignore[attr-defined]
        return getattr(unit, "status", "") == self.running and until is not None and until > at

    def waiting(self, unit: U) -> bool:
        """Neither claimable nor ended (a heavy step waiting on its runs): a claim is a no-op."""
        return False

    def refused(self, job: ResearchJob, unit: U) -> bool:
        """True when the unit must not run (its job was cancelled); the kind ends it here, in the claim."""
        return False

    def give_up(self, job: ResearchJob, unit: U) -> None:
        """End a unit claimed STEP_MAX_ATTEMPTS times already, saying why (inside the claim's transaction)."""
        raise NotImplementedError

    def claim_fields(self, unit: U, at: datetime) -> dict[str, Any]:
        """What a claim writes besides the lease itself."""
        return {"status": self.running}

    def started(self, job: ResearchJob, unit: U) -> None:
        """Emit the event of a successful claim (the unit's attempts count it already)."""

    def lock_related(self, unit: U) -> None:
        """Lock the rows (after the job row) that an end of this unit reads or writes besides its own."""

    def held_match(self) -> dict[str, Any]:
        """What the holder's row must match besides its token."""
        return {}

    def scope(self, claim: Claim[U]) -> AbstractContextManager[Any]:
        """A context around the work and the outcome's write (its value lands in `claim.scratch`)."""
        return nullcontext()

    def write(self, job_id: int, unit: U, outcome: Outcome) -> None:
        """Write the outcome; runs in the holder's transaction, after the holder check."""
        raise NotImplementedError

    def after_end(self, job_id: int, unit: U, *, written: bool) -> None:
        """In the transaction that ended the unit (`written`) or found its lease gone: what comes next."""

    def release(self, claim: Claim[U]) -> None:
        """After the work, whatever the outcome (the stage gives its lease back)."""

    def stale(self, at: datetime) -> QuerySet[U]:
        """For the reaper: the units whose lease lapsed."""
        return self.queryset().filter(status=self.running, lease_until__lt=at)

    def requeue_fields(self, unit: U, at: datetime) -> dict[str, Any]:
        """What a lapsed unit goes back to (its token is taken away besides)."""
        raise NotImplementedError

    def requeued(self, unit: U) -> None:
        """Emit the event of a running unit handed on."""

    def lost(self, stale: datetime) -> QuerySet[U] | None:
        """For the reaper: the units nobody claimed since `stale` (their message was lost), if the kind has any."""
        return None

    def send(self, unit: U) -> None:
        """Queue the unit's message (after commit)."""
        raise NotImplementedError

    # --- the moves --------------------------------------------------------------------------------------

    def claim(self, **lookup: Any) -> Claim[U] | None:
        """Claim the unit found by `lookup`; None when there is nothing to run (see the module doc)."""
        job_id = self.queryset().filter(**lookup).values_list(self.job_field, flat=True).first()
        if job_id is None:
            return None
        fields = self.model.LEASE  # type: ignore[attr-defined]
        with transaction.atomic():
            units = self.queryset().filter(**lookup)
            if self.claim_lock == "unit":
                units = units.select_for_update(of=("self",))
            else:  # serialises with the scheduler and event_emit
                job_lock(job_id, touch=self.claim_lock == "touch")
            job = ResearchJob.objects.filter(pk=job_id).first()
            unit = units.first()
            at = timezone.now()
            if job is None or unit is None or self.is_ended(unit):
                return None  # a duplicate delivery is a no-op
            if self.is_live(unit, at) or self.waiting(unit):
                return None  # someone holds it right now, or it waits on other units
            if self.refused(job, unit):
                return None
            if getattr(unit, fields.attempts) >= settings.STEP_MAX_ATTEMPTS:
                self.give_up(job, unit)
                return None
            token = uuid.uuid4().hex
            write = {fields.token: token, fields.until: at + lease_deadline(),
                     fields.attempts: getattr(unit, fields.attempts) + 1, **self.claim_fields(unit, at)}
            self.model._default_manager.filter(pk=unit.pk).update(**write)
            for key, value in write.items():
                setattr(unit, key, value)
            self.started(job, unit)
            return Claim(job, unit, token)

    def holder(self, unit: U, token: str) -> None:
        """Inside the outcome's transaction: lock the unit's row and make sure `token` still holds it."""
        unit_holder(self.model, unit.pk, token, what=self.describe(unit), **self.held_match())

    def finish(self, job_id: int, unit: U, token: str, outcome: Outcome) -> bool:
        """Write the outcome only if `token` still holds the lease (the reaper may have handed the unit on)."""
        return self.finish_by(job_id, unit, token, lambda: self.write(job_id, unit, outcome))

    def finish_by(self, job_id: int, unit: U, token: str, write: Callable[[], None]) -> bool:
        with transaction.atomic():
            job_lock(job_id)
            self.lock_related(unit)
            try:
                self.holder(unit, token)
            except LeaseLost:
                held = False
            else:
                held = True
                write()
            self.after_end(job_id, unit, written=held)
        return held

    def requeue_stale(self, at: datetime) -> int:
        """For the reaper: queue again the units whose worker stopped renewing the lease, and re-send lost ones."""
        fields = self.model.LEASE  # type: ignore[attr-defined]
        count = 0
        for unit in self.stale(at):
            status: str = unit.status  # type: ignore[attr-defined]
            with transaction.atomic():
                job_lock(getattr(unit, self.job_field))
                self.lock_related(unit)
                # The token goes with the lease: a stalled holder can no longer renew it or write an outcome.
                n = self.model._default_manager.filter(
                    pk=unit.pk, status=status, **{fields.until: getattr(unit, fields.until)},
                ).update(**{fields.token: "", **self.requeue_fields(unit, at)})
                if n:
                    count += 1
                    if status == self.running:
                        self.requeued(unit)
                    self.send(unit)
        return count + self.resend_lost(at)

    def resend_lost(self, at: datetime) -> int:
        """Send again the units nobody claimed within the grace; `updated` marks the new send."""
        lost = self.lost(at - queue_grace())
        if lost is None:
            return 0
        count = 0
        for unit in lost:
            with transaction.atomic():
                job_lock(getattr(unit, self.job_field))
                if lost.filter(pk=unit.pk).update(updated=at):  # not re-sent by another reaper meanwhile
                    count += 1
                    self.send(unit)
        return count


def unit_run(kind: UnitKind[U], work: Callable[[Claim[U]], Any], /, **lookup: Any) -> None:
    """Run one unit from claim to outcome: claim it, keep its lease while `work` runs, then write the
    outcome (done with work's value, cancelled, or failed with the exception) through the holder check.
    A duplicate delivery does nothing; a holder whose lease passed on stops without an outcome."""
    claim = kind.claim(**lookup)
    if claim is None:
        return
    fields = kind.model.LEASE  # type: ignore[attr-defined]
    label = kind.describe(claim.unit)
    with lease_kept(kind.model, claim.unit.pk, fields.until, token_field=fields.token, token=claim.token):
        try:
            try:
                with kind.scope(claim) as claim.scratch:
                    kind.finish(claim.job_id, claim.unit, claim.token, Outcome("done", value=work(claim)))
            except LeaseLost:
                raise
            except JobCancelled as exc:
                if not kind.cancellable:
                    raise
                kind.finish(claim.job_id, claim.unit, claim.token, Outcome("cancelled", error=exc))
        except LeaseLost:  # another worker holds the unit now: its outcome is the one that counts
            logger.warning("%s: the lease passed to another worker; this one stops without an outcome", label)
        except Exception as exc:  # any failure is shown as a failure, with its reason
            if isinstance(exc, kind.expected):
                logger.info("%s failed: %s", label, exc)
            else:
                logger.exception("%s failed", label)
            try:
                kind.finish(claim.job_id, claim.unit, claim.token, Outcome("failed", error=exc))
            except LeaseLost:
                logger.warning("%s: the lease passed to another worker; this one stops without an outcome", label)
        finally:
            kind.release(claim)


# --- the two families of units with status columns ----------------------------------------------------------

ENDED = (StepStatus.DONE, StepStatus.FAILED, StepStatus.CANCELLED)

W = TypeVar("W", bound=LeasedWork)


class WorkKind(UnitKind[W]):
    """Plan steps and heavy runs (`LeasedWork` rows): queued → running → done | failed | cancelled, each end an
    event `<kind>.completed` / `.failed` / `.cancelled`; the work's value is a `StepResult`."""

    kind: str  # the events' prefix: `<kind>.started`, `.completed`, `.failed`, `.cancelled`, `.requeued`
    ended = ENDED
    cancellable = True
    expected = (BudgetExceeded, SoftTimeLimitExceeded)

    def payload(self, unit: W) -> dict[str, Any]:
        """What names the unit in each of its events."""
        raise NotImplementedError

    def completed(self, unit: W, fields: dict[str, Any]) -> dict[str, Any]:
        """What `<kind>.completed` says beyond `payload`, from the outcome's fields."""
        return {}

    def refused(self, job: ResearchJob, unit: W) -> bool:
        if job.status != JobStatus.RESEARCHING or job.cancel_requested:
            self._end_unclaimed(job.pk, unit, status=StepStatus.CANCELLED, error="cancelled")
            return True
        return False

    def give_up(self, job: ResearchJob, unit: W) -> None:
        self._end_unclaimed(job.pk, unit, status=StepStatus.FAILED, error=(
            f"gave up after {unit.attempts} attempts: the worker running it was lost each time"))

    def claim_fields(self, unit: W, at: datetime) -> dict[str, Any]:
        return {"status": StepStatus.RUNNING, "started_at": at, "error": ""}

    def held_match(self) -> dict[str, Any]:
        return {"status": StepStatus.RUNNING}

    def write(self, job_id: int, unit: W, outcome: Outcome) -> None:
        self.write_fields(job_id, unit, self.outcome_fields(outcome))

    def outcome_fields(self, outcome: Outcome) -> dict[str, Any]:
        if outcome.status == "done":
            result: StepResult = outcome.value
            if not result.report_md.strip():
                raise ValueError("the step produced an empty report")
            return {"status": StepStatus.DONE, "result_md": result.report_md,
                    "result": {"figures": result.figures, "notes": jsonable(result.notes)}}
        if outcome.status == "cancelled":
            return {"status": StepStatus.CANCELLED, "error": "cancelled"}
        if isinstance(outcome.error, SoftTimeLimitExceeded):
            return {"status": StepStatus.FAILED,
                    "error": f"ran over its time limit ({settings.CELERY_TASK_SOFT_TIME_LIMIT} s)"}
        return {"status": StepStatus.FAILED, "error": short(outcome.error or Exception("failed"))}

    def write_fields(self, job_id: int, unit: W, fields: dict[str, Any]) -> None:
        self.model._default_manager.filter(pk=unit.pk).update(finished_at=timezone.now(), lease_until=None, **fields)
        self._ended_event(job_id, unit, fields)

    def finish_fields(self, job_id: int, unit: W, token: str, fields: dict[str, Any]) -> bool:
        """`finish` with the outcome given as the row's fields."""
        return self.finish_by(job_id, unit, token, lambda: self.write_fields(job_id, unit, fields))

    def stale(self, at: datetime) -> QuerySet[W]:
        # A queued unit's lease_until is its queue grace: one nobody claimed in time had its message lost.
        return self.queryset().filter(status__in=[StepStatus.RUNNING, StepStatus.QUEUED], lease_until__lt=at,
                                      job__status=JobStatus.RESEARCHING)

    def requeue_fields(self, unit: W, at: datetime) -> dict[str, Any]:
        return {"status": StepStatus.QUEUED, "lease_until": at + queue_grace()}

    def requeued(self, unit: W) -> None:
        event_emit(job_id=unit.job_id, type=f"{self.kind}.requeued",
                   payload={**self.payload(unit), "attempt": unit.attempts, "reason": LOST})

    def _end_unclaimed(self, job_id: int, unit: W, **fields: Any) -> None:
        """End a unit its claim will not run (inside the claim's transaction: the job row is locked)."""
        self.lock_related(unit)
        self.write_fields(job_id, unit, fields)
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


S = TypeVar("S", bound=OneShotUnit)


class OneShotKind(UnitKind[S]):
    """Units a user's action leaves for a worker (`OneShotUnit` rows: a long report edit's check, a follow-up's
    answer): pending → running → done | failed; re-sent when nobody claimed them within the grace."""

    ended = (OutputStatus.DONE, OutputStatus.FAILED)
    # The claim locks the unit's row only, as it always has: the job is done and runs nothing else, and a
    # claim must not wait on a user's action that holds the job row (the outcome's transaction does take it
    # first; tests/faults/test_background_unit_faults.py holds it there to kill the worker mid-save).
    claim_lock = "unit"
    requeued_type: str  # the event of a running one handed on

    def requeued_payload(self, unit: S) -> dict[str, Any]:
        raise NotImplementedError

    def give_up_reason(self, unit: S) -> str:
        raise NotImplementedError

    def reason(self, exc: BaseException) -> str:
        """A failure as the page shows it."""
        return str(exc)

    def succeed(self, unit: S, value: Any) -> None:
        """Write the done outcome (in the holder's transaction)."""
        raise NotImplementedError

    def fail(self, unit: S, error: str) -> None:
        """Write the failed outcome and its event (the caller holds the row)."""
        raise NotImplementedError

    def ended_fields(self, status: str, **fields: Any) -> dict[str, Any]:
        return {"status": status, "lease_until": None, "lease_token": "", "finished_at": timezone.now(), **fields}

    def give_up(self, job: ResearchJob, unit: S) -> None:
        self.fail(unit, self.give_up_reason(unit))

    def claim_fields(self, unit: S, at: datetime) -> dict[str, Any]:
        return {"status": OutputStatus.RUNNING, "updated": at}

    def write(self, job_id: int, unit: S, outcome: Outcome) -> None:
        if outcome.status == "done":
            self.succeed(unit, outcome.value)
        else:
            self.fail(unit, self.reason(outcome.error or Exception("failed")))

    def requeue_fields(self, unit: S, at: datetime) -> dict[str, Any]:
        return {"status": OutputStatus.PENDING, "updated": at}

    def requeued(self, unit: S) -> None:
        event_emit(job_id=unit.job_id, type=self.requeued_type,
                   payload={**self.requeued_payload(unit), "attempt": unit.attempts, "reason": LOST})

    def lost(self, stale: datetime) -> QuerySet[S]:
        return self.queryset().filter(status=OutputStatus.PENDING, updated__lt=stale)
