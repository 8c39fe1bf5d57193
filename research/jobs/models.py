"""Jobs, their plans, steps, sources, events, outputs and model-call accounting.

The database is the source of truth for job state (docs/architecture.md, "The job graph").
"""

from __future__ import annotations

from typing import Any, NamedTuple

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    COORDINATING = "coordinating", _("Coordinating")
    INVESTIGATING = "investigating", _("Investigating")
    PLANNING = "planning", _("Planning")
    AWAITING_CLARIFICATION = "awaiting_clarification", _("Waiting for your answers")
    AWAITING_REVIEW = "awaiting_review", _("Awaiting review")
    RESEARCHING = "researching", _("Researching")
    REPORTING = "reporting", _("Reporting")
    RENDERING = "rendering", _("Rendering")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


TERMINAL_STATUSES = frozenset({JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED})
# Stages a worker is actively running; the reaper restarts them if their lease lapses.
WORKING_STATUSES = frozenset(
    {JobStatus.QUEUED, JobStatus.COORDINATING, JobStatus.INVESTIGATING, JobStatus.PLANNING, JobStatus.REPORTING}
)


class LeaseFields(NamedTuple):
    """The names of a leased row's lease columns: one protocol (research/jobs/units/lease.py) reads them."""

    until: str = "lease_until"
    token: str = "lease_token"  # noqa: S105 (a column's name)
    attempts: str = "attempts"


class LeasedUnit(models.Model):
    """A unit of work under the lease protocol (research/jobs/units/lease.py): claims so far, a lease that its
    holder renews, and the holder's fencing token. Steps, heavy runs, renders, report edit checks and
    follow-ups all are one; a job's stage lease has the same three columns under other names (`LEASE`)."""

    attempts = models.PositiveIntegerField(default=0)  # claims so far; STEP_MAX_ATTEMPTS then it fails
    lease_until = models.DateTimeField(null=True, blank=True)
    lease_token = models.CharField(max_length=40, blank=True)  # the holder's; fences its writes
    LEASE = LeaseFields()
    # Declared by each kind (their choices and defaults differ); the protocol relies on them.
    status: str
    job_id: int

    class Meta:
        abstract = True


class ResearchJob(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="research_jobs")
    question = models.TextField()
    options = models.JSONField(default=dict)
    engine = models.CharField(max_length=16, default="offline")
    status = models.CharField(max_length=24, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    locale = models.CharField(max_length=16, default="en-US")
    title = models.CharField(max_length=300, blank=True)
    answer = models.TextField(blank=True)  # the coordinator's direct answer (greetings)
    error = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    replans = models.PositiveIntegerField(default=0)
    event_seq = models.PositiveIntegerField(default=0)  # last seq written
    # Stage lease: which stage a worker holds and until when (the reaper restarts lapsed stages).
    stage_lease_until = models.DateTimeField(null=True, blank=True)
    stage_attempts = models.PositiveIntegerField(default=0)
    stage_lease_token = models.CharField(max_length=40, blank=True)  # the holder's; fences its writes
    # The stage lease under the same protocol as the units' (research/jobs/units/stages.py).
    LEASE = LeaseFields(until="stage_lease_until", token="stage_lease_token", attempts="stage_attempts")  # noqa: S106
    review_deadline = models.DateTimeField(null=True, blank=True)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    llm_seconds = models.FloatField(default=0.0)
    invalid_citations = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Job {self.pk}: {self.question[:60]}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def outputs(self) -> list[str]:
        return list(self.options.get("outputs", ["md"]))

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class PlanVersion(models.Model):
    """Every plan the planner writes and every user edit, numbered per job."""

    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="plan_versions")
    number = models.PositiveIntegerField()
    author = models.CharField(max_length=16, choices=[("planner", "planner"), ("user", "user")])
    plan = models.JSONField()
    feedback = models.TextField(blank=True)
    accepted = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="uniq_plan_version")]

    def __str__(self) -> str:
        return f"Plan v{self.number} of job {self.job_id}"


class StepStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class LeasedWork(LeasedUnit):
    """What a step and a heavy step's run share as units of work: a leased unit with a Markdown outcome."""

    result_md = models.TextField(blank=True)
    result = models.JSONField(default=dict)  # figures, notes
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class JobStep(LeasedWork):
    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="steps")
    step_id = models.CharField(max_length=40)
    position = models.PositiveIntegerField()
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    step_type = models.CharField(max_length=16, default="research")
    need_search = models.BooleanField(default=True)
    depends_on = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=StepStatus.choices, default=StepStatus.PENDING)

    class Meta:
        ordering = ["job", "position"]
        constraints = [models.UniqueConstraint(fields=["job", "step_id"], name="uniq_job_step")]

    def __str__(self) -> str:
        return f"{self.step_id} of job {self.job_id}"


class StepRun(LeasedWork):
    """One of the k parallel runs of a research step in heavy mode (docs/agents.md, "Depth").

    A run is its own unit of work: claimed, leased and reaped like a step (research/jobs/units/runs.py).
    When every run of a step ended, the step itself is queued again and synthesizes their results.
    """

    step = models.ForeignKey(JobStep, on_delete=models.CASCADE, related_name="runs")
    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="step_runs")
    index = models.PositiveSmallIntegerField()  # 0-based; shown as "run index + 1"
    variant = models.JSONField(default=dict)  # research.agents.types.RunVariant as stored
    status = models.CharField(max_length=16, choices=StepStatus.choices, default=StepStatus.QUEUED)

    class Meta:
        ordering = ["step", "index"]
        constraints = [models.UniqueConstraint(fields=["step", "index"], name="uniq_step_run")]

    def __str__(self) -> str:
        return f"run {self.index} of {self.step}"


class Source(models.Model):
    """A page or knowledge-base chunk an agent actually read. `number` is its one global citation number."""

    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="sources")
    number = models.PositiveIntegerField()
    url = models.URLField(max_length=2000)
    title = models.CharField(max_length=500, blank=True)
    kind = models.CharField(max_length=8, default="web")
    text = models.TextField(blank=True)
    text_hash = models.CharField(max_length=64)
    step_id = models.CharField(max_length=40, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="uniq_source_number"),
            models.UniqueConstraint(fields=["job", "url"], name="uniq_source_url"),
        ]

    def __str__(self) -> str:
        return f"[{self.number}] {self.url}"


class JobEvent(models.Model):
    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "seq"]
        constraints = [models.UniqueConstraint(fields=["job", "seq"], name="uniq_job_event_seq")]

    def __str__(self) -> str:
        return f"{self.job_id}#{self.seq} {self.type}"

    def as_message(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "payload": self.payload, "ts": self.created.timestamp()}


class ReportVersion(models.Model):
    """Each report the reporter writes and each user edit, numbered per job."""

    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="report_versions")
    number = models.PositiveIntegerField()
    author = models.CharField(max_length=16, default="reporter")
    markdown = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="uniq_report_version")]

    def __str__(self) -> str:
        return f"Report v{self.number} of job {self.job_id}"


class OutputStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")


class OutputRender(LeasedUnit):
    """The state of one requested output (pdf, pptx, podcast) of a job: a leased unit (units/renders.py)."""

    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="renders")
    kind = models.CharField(max_length=16)
    status = models.CharField(max_length=16, choices=OutputStatus.choices, default=OutputStatus.PENDING)
    error = models.TextField(blank=True)
    report_version = models.PositiveIntegerField(default=0)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "kind"], name="uniq_output_render")]

    def __str__(self) -> str:
        return f"{self.kind} of job {self.job_id}: {self.status}"


def artifact_path(instance: Artifact, filename: str) -> str:
    return f"jobs/{instance.job_id}/{filename}"


class Artifact(models.Model):
    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="artifacts")
    kind = models.CharField(max_length=16)  # md, pdf, pptx, podcast, transcript, vtt, figure
    name = models.CharField(max_length=200)
    file = models.FileField(upload_to=artifact_path, max_length=400)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    # What the job page needs without opening the file (a podcast's chapters), written with it.
    meta = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job", "kind", "name"]
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="uniq_artifact_name")]

    def __str__(self) -> str:
        return f"{self.name} of job {self.job_id}"


class LLMCall(models.Model):
    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="llm_calls", null=True)
    step_id = models.CharField(max_length=40, blank=True)
    run = models.PositiveSmallIntegerField(null=True, blank=True)  # heavy mode: which parallel run of the step
    agent = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0)
    ok = models.BooleanField(default=True)
    error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return f"{self.agent} call for job {self.job_id}"


class OneShotUnit(LeasedUnit):
    """What the one-shot units a user's action leaves for a worker share (a long report edit's check, a
    follow-up's answer): a leased unit with a status like a render's (research/jobs/units/lease.py, `OneShotKind`),
    re-sent by the reaper when their worker died or their message was lost."""

    status = models.CharField(max_length=16, choices=OutputStatus.choices, default=OutputStatus.PENDING)
    error = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)  # last (re)send: a pending one older than the grace is re-sent
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class ReportEditCheck(OneShotUnit):
    """A report edit too long to check on the web thread, waiting for (or checked by) a worker.

    research/jobs/services.py: report_edit hands edits over REPORT_CHECK_INLINE_CHARS here;
    units/edit_check.py (a Celery unit) checks it and stores the new version. Leased like a render:
    the reaper re-queues a check whose worker died or whose message was lost (research/jobs/units/reaper.py).
    """

    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="edit_checks")
    markdown = models.TextField()
    version = models.PositiveIntegerField(null=True, blank=True)  # the report version it became

    class Meta:
        ordering = ["created"]

    def __str__(self) -> str:
        return f"Report edit check {self.pk} of job {self.job_id}"


class FollowUp(OneShotUnit):
    """A question asked about a finished job's report, and its cited answer.

    Answered by the `followup` unit (research/jobs/units/followups.py), leased like a render: the reaper re-queues
    one whose worker died or whose message was lost (research/jobs/units/reaper.py).
    """

    job = models.ForeignKey(ResearchJob, on_delete=models.CASCADE, related_name="followups")
    number = models.PositiveIntegerField()
    question = models.TextField()
    answer = models.TextField(blank=True)  # Markdown with checked citations and its own references
    added_sources = models.PositiveIntegerField(default=0)  # found by the extra research round
    folded_into = models.PositiveIntegerField(null=True, blank=True)  # report version that includes it

    class Meta:
        ordering = ["job", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="uniq_followup_number")]

    def __str__(self) -> str:
        return f"Follow-up {self.number} of job {self.job_id}"
