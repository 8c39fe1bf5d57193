"""Claiming a one-shot unit (models.OneShotUnit: a long report edit's check, a follow-up's answer), like a render.

- `oneshot_claim`: under the row lock, a no-op for an ended unit or one under a live lease; a unit claimed
  STEP_MAX_ATTEMPTS times already is given up (`give_up` fails it, saying why); otherwise it is `running`
  with one more attempt, a fresh fencing token and a lease (which `leases.lease_kept` renews).
- `oneshot_holder`: inside the transaction that writes the outcome, lock the row and make sure this worker
  still holds it (else `LeaseLost`: another worker took it over).

The reaper re-sends lapsed and lost ones (research/jobs/units/reaper.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from research.jobs.models import OneShotUnit, OutputStatus
from research.jobs.units.leases import LeaseLost, lease_deadline

U = TypeVar("U", bound=OneShotUnit)


def oneshot_claim(model: type[U], pk: int, *, give_up: Callable[[U], None]) -> tuple[U, str] | None:
    """(the unit, this holder's token), or None when there is nothing to do."""
    objects: Any = model._default_manager
    with transaction.atomic():
        unit = objects.select_for_update().filter(pk=pk).first()
        if unit is None or unit.status in (OutputStatus.DONE, OutputStatus.FAILED):
            return None  # a duplicate delivery, or already ended
        if unit.status == OutputStatus.RUNNING and unit.lease_until and unit.lease_until > timezone.now():
            return None  # a live holder has it
        if unit.attempts >= settings.STEP_MAX_ATTEMPTS:
            give_up(unit)
            return None
        token = uuid.uuid4().hex
        objects.filter(pk=pk).update(status=OutputStatus.RUNNING, attempts=unit.attempts + 1,
                                     lease_until=timezone.now() + lease_deadline(), lease_token=token,
                                     updated=timezone.now())
    return unit, token


def oneshot_holder(model: type[OneShotUnit], pk: int, token: str, *, what: str) -> None:
    """Raise LeaseLost unless this worker (`token`) still holds the unit; locks its row."""
    objects: Any = model._default_manager
    if not objects.select_for_update().filter(pk=pk, lease_token=token).exists():
        raise LeaseLost(f"{what} {pk} passed to another worker")
