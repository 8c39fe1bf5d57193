"""Fair share between accounts: per-user caps on running jobs and units, the rest waiting in order.

Every unit goes into one FIFO broker queue, so one account that queued 30 heavy jobs used to put hundreds
of units in front of everyone else's first (issue 34: a one-step job took 107 s instead of 1 s). The
broker is left FIFO; instead no account has more than its share *in* it:

- jobs: at most FAIR_USER_RUNNING_JOBS of an account's jobs run at once (a job waiting for review or an
  answer holds nothing and does not count). A further job stays `queued`, says why on its page ("3 of your
  jobs are running; this one starts when one ends"), and starts, oldest first, when one of them ends
  (`jobs_start_waiting`, called as a job ends; the reaper's re-send of queued jobs re-checks as well);
- units: an account's queued and running plan steps and heavy runs, over all its jobs, stay within
  FAIR_USER_RUNNING_UNITS (a heavy step with k runs counts k). The scheduler queues no more than the free
  slots; when a unit ends, the account's other jobs are scheduled again (`schedule_others`).

So another account's first unit waits behind at most one share of each busy account, never behind their
whole backlog: a user's 31st unit does not run before another user's first. Both caps are settings;
0 turns one off. The hooks are small and marked "fair share" in research/jobs/units/stages.py and
steps.py; the locks are taken in the order job row, then the owner's user row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from research.jobs.dispatch import enqueue_advance, enqueue_schedule
from research.jobs.events import event_emit
from research.jobs.models import JobStatus, JobStep, ResearchJob, StepRun, StepStatus

# Statuses in which a job holds (or is about to hold) a worker; review and clarification hold none.
RUNNING_STATUSES = (JobStatus.COORDINATING, JobStatus.INVESTIGATING, JobStatus.PLANNING, JobStatus.RESEARCHING,
                    JobStatus.REPORTING, JobStatus.RENDERING)
ACTIVE_UNIT = (StepStatus.QUEUED, StepStatus.RUNNING)


def owner_lock(owner_id: int) -> None:
    """Serialise the admission decisions of one account (after the job row's lock, never before)."""
    get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk").first()


def jobs_capped() -> bool:
    return int(settings.FAIR_USER_RUNNING_JOBS) > 0


def jobs_running(owner_id: int) -> int:
    return ResearchJob.objects.filter(owner_id=owner_id, status__in=RUNNING_STATUSES).count()


def job_may_start(job: ResearchJob) -> bool:
    """Whether a queued job may start now: the account's running jobs plus its older waiting ones leave it a
    place under FAIR_USER_RUNNING_JOBS. Call with the owner's lock held (owner_lock)."""
    cap = int(settings.FAIR_USER_RUNNING_JOBS)
    if cap <= 0:
        return True
    older_waiting = ResearchJob.objects.filter(owner_id=job.owner_id, status=JobStatus.QUEUED,
                                               cancel_requested=False, pk__lt=job.pk).count()
    return jobs_running(job.owner_id) + older_waiting < cap


def job_turn(job: ResearchJob) -> str:
    """In the stage claim (the job row locked): "start" when a queued job may start now (the caller moves it
    to `coordinating` in the same transaction, under the owner's lock taken here, so two claims cannot both
    take the last place), "wait" when it must wait (it says why, once, and is sent again when one of the
    owner's jobs ends), "" when the caps do not apply."""
    if job.status != JobStatus.QUEUED or job.cancel_requested or not jobs_capped():
        return ""
    owner_lock(job.owner_id)
    if job_may_start(job):
        return "start"
    job_wait(job)
    ResearchJob.objects.filter(pk=job.pk).update(updated=timezone.now())  # the reaper re-sends after a grace
    return "wait"


def job_wait_text(job: ResearchJob) -> str:
    """What the job page says while the job waits for one of the account's running jobs to end, or ""."""
    if job.status == JobStatus.RESEARCHING:
        return _units_wait_text(job)
    cap = int(settings.FAIR_USER_RUNNING_JOBS)
    if cap <= 0 or job.status != JobStatus.QUEUED:
        return ""
    running = jobs_running(job.owner_id)
    if running < cap:
        return ""
    return ngettext("%(n)d of your jobs is running; this one starts when it ends.",
                    "%(n)d of your jobs are running; this one starts when one ends.", running) % {"n": running}


def _units_wait_text(job: ResearchJob) -> str:
    """While the account is at its unit cap and this job has steps still to run."""
    cap = int(settings.FAIR_USER_RUNNING_UNITS)
    if cap <= 0 or not job.steps.filter(status=StepStatus.PENDING).exists():
        return ""
    used = units_in_use(job.owner_id)
    if used < cap:
        return ""
    return ngettext("Your jobs have %(n)d step running or queued, the most one account may; the next starts "
                    "when it ends.",
                    "Your jobs have %(n)d steps running or queued, the most one account may; the next start "
                    "when one ends.", used) % {"n": used}


def job_wait(job: ResearchJob) -> None:
    """Record once that the job waits for its turn (the event log and the live page show it)."""
    text = job_wait_text(job) or _("Your other jobs are running; this one starts when one ends.")
    last = job.events.order_by("-seq").values_list("type", flat=True).first()
    if last != "job.waiting":
        event_emit(job_id=job.pk, type="job.waiting", payload={"reason": "running_jobs", "message": text})


def jobs_start_waiting(owner_id: int) -> None:
    """After one of the account's jobs ended (or left the running statuses): send the oldest waiting ones
    that now have a place. Their stage re-checks the cap under the owner's lock before it starts."""
    cap = int(settings.FAIR_USER_RUNNING_JOBS)
    waiting = ResearchJob.objects.filter(owner_id=owner_id, status=JobStatus.QUEUED, cancel_requested=False)
    free = len(waiting) if cap <= 0 else max(0, cap - jobs_running(owner_id))
    for job_id in waiting.order_by("pk").values_list("pk", flat=True)[:free]:
        enqueue_advance(job_id)


def units_in_use(owner_id: int) -> int:
    """The account's queued and running steps and heavy runs (a step waiting on its runs counts its runs)."""
    steps = JobStep.objects.filter(job__owner_id=owner_id, job__status=JobStatus.RESEARCHING, status__in=ACTIVE_UNIT)
    plain = steps.exclude(pk__in=StepRun.objects.values("step_id")).count()
    runs = StepRun.objects.filter(job__owner_id=owner_id, job__status=JobStatus.RESEARCHING,
                                  status__in=ACTIVE_UNIT).count()
    synthesis = steps.filter(pk__in=StepRun.objects.values("step_id"), lease_until__isnull=False).count()
    return plain + runs + synthesis


def unit_slots(owner_id: int) -> int | None:
    """How many more units the account may queue now (None: no cap). Call with the owner's lock held."""
    cap = int(settings.FAIR_USER_RUNNING_UNITS)
    if cap <= 0:
        return None
    return max(0, cap - units_in_use(owner_id))


def unit_cost(runs: int) -> int:
    """What one step takes of the account's units: 1, or k for a heavy step with k runs (never more than
    the whole cap, or a heavy step could never start)."""
    cap = int(settings.FAIR_USER_RUNNING_UNITS)
    return max(1, min(runs, cap) if cap > 0 else runs)


def steps_admitted(owner_id: int, costs: list[int]) -> int:
    """How many of the ready steps (their costs, in order) fit in the account's free unit slots; decided under
    the owner's lock (after the job row's), so two schedulers of one account cannot both take the last."""
    if int(settings.FAIR_USER_RUNNING_UNITS) <= 0 or not costs:
        return len(costs)
    owner_lock(owner_id)
    slots = unit_slots(owner_id)
    if slots is None:
        return len(costs)
    taken = 0
    for cost in costs:
        if cost > slots:
            break
        slots -= cost
        taken += 1
    return taken


def schedule_others(owner_id: int, *, except_job: int) -> None:
    """A unit of the account ended: its other researching jobs with steps still to run may now have room."""
    if int(settings.FAIR_USER_RUNNING_UNITS) <= 0:
        return
    waiting = (JobStep.objects.filter(job__owner_id=owner_id, job__status=JobStatus.RESEARCHING,
                                      status=StepStatus.PENDING).exclude(job_id=except_job)
               .values_list("job_id", flat=True).distinct())
    for job_id in sorted(set(waiting)):
        enqueue_schedule(job_id)


def job_cost(options: Mapping[str, Any]) -> int:
    """What a new job counts against JOB_CREATE_RATE: 1, or k for a heavy job with k runs per step."""
    if options.get("depth") == "heavy":
        return max(1, int(options.get("runs") or 1))
    return 1
