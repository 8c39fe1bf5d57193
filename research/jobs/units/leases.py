"""Leases: a running unit renews its lease while it works; the reaper re-queues units whose lease lapsed.

Leases are short (STEP_LEASE_S, 8 s by default) and renewed every quarter of that by a side thread, so
a worker that dies (kill -9, OOM, a lost host) stops renewing and the reaper (every REAPER_INTERVAL_S)
hands its units on within seconds; see docs/operations.md, "Takeover". A lease with a token is fenced:
a renewal or an outcome is written only where the row still carries this holder's token, so a holder
that was too slow to renew (and was replaced) can neither extend the new holder's lease nor write a
second outcome. The renewal thread notices the loss and says so (`Lease.lost`); `lease_check` raises
`LeaseLost` inside a unit's final write transaction.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import Model
from django.utils import timezone

logger = logging.getLogger(__name__)

RENEWALS_PER_LEASE = 4  # three renewals may be missed (a busy database, a stalled thread) before it lapses


class LeaseLost(Exception):
    """This unit's lease was handed to another holder: stop, write nothing."""


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
