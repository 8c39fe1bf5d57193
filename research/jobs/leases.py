"""Leases: a running unit renews its lease while it works; the reaper re-queues units whose lease lapsed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.db.models import Model
from django.utils import timezone

logger = logging.getLogger(__name__)


def lease_deadline(seconds: float | None = None) -> timedelta:
    return timedelta(seconds=seconds if seconds is not None else settings.STEP_LEASE_S)


@contextmanager
def lease_kept(model: type[Model], pk: int, field: str, *, token_field: str = "", token: str = "") -> Iterator[None]:
    """Renew `field` on the row every lease/3 seconds from a side thread until the block ends."""
    stop = threading.Event()
    interval = max(0.5, settings.STEP_LEASE_S / 3)

    def renew() -> None:
        try:
            while not stop.wait(interval):
                qs = model.objects.filter(pk=pk)  # type: ignore[attr-defined]
                if token_field:
                    qs = qs.filter(**{token_field: token})
                try:
                    qs.update(**{field: timezone.now() + lease_deadline()})
                except DatabaseError:
                    # A busy database must not end the renewals (the unit would look dead): try next round.
                    logger.warning("could not renew the lease of %s %s", model.__name__, pk, exc_info=True)
                    close_old_connections()
        finally:
            connection.close()

    thread = threading.Thread(target=renew, name=f"lease-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        close_old_connections()
