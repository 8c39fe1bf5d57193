"""The job row's lock, the first lock of every write to a job's rows, and per-job numbering under it.

Every transaction that writes a job's units, events, versions or sources locks the job row before any other
row (the lease protocol, the scheduler, `event_emit`), so no two of them wait on each other in a cycle
(PostgreSQL would break such a deadlock by aborting one). Per-job numbers (plan and report versions,
follow-ups, sources) are "the largest so far + 1": read under the same lock, two writers can never pick the
same number.
"""

from __future__ import annotations

from django.db import connection, models
from django.db.models import Max
from django.utils import timezone

from research.jobs.models import ResearchJob


def job_lock(job_id: int, *, touch: bool = False) -> None:
    """Lock the job row until this transaction ends.

    `touch` takes the lock with an UPDATE of `updated` (what the step, run and render claims and the
    source registry have always done: `updated` is their sign of life to the reaper); otherwise a
    SELECT ... FOR UPDATE, which changes nothing.
    """
    if touch:
        ResearchJob.objects.filter(pk=job_id).update(updated=timezone.now())
    else:
        ResearchJob.objects.select_for_update().filter(pk=job_id).values_list("pk").first()


def job_number_next(*, job_id: int, model: type[models.Model], field: str = "number") -> int:
    """The next per-job number of `model` rows (1, 2, 3 …), with the job row locked.

    Call it inside the transaction that creates the row: the lock is held until that transaction ends, so
    a second writer waits and then sees the new row.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("job_number_next must run inside the transaction that creates the numbered row")
    job_lock(job_id)
    rows = model._default_manager.filter(job_id=job_id)
    return int(rows.aggregate(last=Max(field))["last"] or 0) + 1
