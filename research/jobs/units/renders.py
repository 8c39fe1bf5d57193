"""Rendering a job's outputs (the registered formats: PDF, PPTX, podcast) from its latest report, one unit per kind.

Everything the job page shows is made here, once, and kept in the storage with the files: the PDF's
page thumbnails, the deck's slide thumbnails (previews/), the podcast's chapters (Artifact.meta). A
page view then reads the storage and the database only, on any web host.

services.renders_queue() queues them; the last render to end moves the job to done or failed.
"""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from research.jobs import storage
from research.jobs.artifacts import artifact_save_file
from research.jobs.dispatch import enqueue_render
from research.jobs.events import event_emit
from research.jobs.models import JobStatus, OutputRender, OutputStatus, ResearchJob
from research.jobs.states import job_set_status
from research.jobs.units.common import engine_for, now, short
from research.jobs.units.context import JobContext
from research.jobs.units.lease import Claim, Outcome, UnitKind, unit_run
from research.render.formats import RenderRequest, output_format, previews_safely

logger = logging.getLogger(__name__)


@dataclass
class _Made:
    """What one render made in its work folder: downloads, thumbnails for the job page, facts about files."""

    files: list[tuple[str, str, Path]] = field(default_factory=list)  # (artifact kind, name, path)
    previews: dict[str, list[Path]] = field(default_factory=dict)  # thumbnail kind -> pages in order
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)  # artifact name -> Artifact.meta


def _render(job: ResearchJob, kind: str, markdown: str, workdir: Path) -> _Made:
    """Render one output into workdir, as its registered format says (research/render/formats/)."""
    fmt = output_format(kind)
    if fmt.render is None:
        raise ValueError(f"{kind} is not rendered")
    # Reports say figures/<name> and the renderers take bare names: fetch the job's figures from the
    # storage into this worker's temp dir and hand over their folder.
    figures_dir = storage.files_fetch(job.pk, workdir / "job") / "figures"
    made = fmt.render(RenderRequest(markdown=markdown, out_dir=workdir, locale=job.locale, title=job.title or None,
                                    figures_dir=figures_dir, engine=engine_for(job), ctx=JobContext(job)))
    files = [(f.kind, fmt.file_name(f), path) for f, path in zip(fmt.files, made.paths, strict=True)]
    previews = {}
    if fmt.preview is not None:
        previews[fmt.preview_kind] = previews_safely(fmt, made, workdir / "previews", what=f"job {job.pk}")
    return _Made(files, previews, meta={files[0][1]: made.meta} if made.meta else {})


class _Renders(UnitKind[OutputRender]):
    """One output of a job under the lease protocol (lease.py): pending → running → done | failed; the last
    render to end moves the job to done or failed."""

    model = OutputRender
    name = "renders"
    ended = (OutputStatus.DONE, OutputStatus.FAILED)

    def describe(self, unit: OutputRender) -> str:
        return f"the {unit.kind} render of job {unit.job_id}"

    def give_up(self, job: ResearchJob, unit: OutputRender) -> None:
        OutputRender.objects.filter(pk=unit.pk).update(
            status=OutputStatus.FAILED, error=f"gave up after {unit.attempts} attempts (worker lost)")
        job_finish_if_rendered(job_id=job.pk)

    def claim_fields(self, unit: OutputRender, at: datetime) -> dict[str, Any]:
        return {"status": OutputStatus.RUNNING}

    def started(self, job: ResearchJob, unit: OutputRender) -> None:
        event_emit(job_id=job.pk, type="artifact.started", payload={"kind": unit.kind})

    def scope(self, claim: Claim[OutputRender]) -> AbstractContextManager[Path]:
        return storage.work_dir(f"render-{claim.job_id}-{claim.unit.kind}")

    def write(self, job_id: int, unit: OutputRender, outcome: Outcome) -> None:
        if outcome.status != "done":
            error = short(outcome.error or Exception("failed"))
            OutputRender.objects.filter(pk=unit.pk).update(status=OutputStatus.FAILED, error=error,
                                                           lease_until=None, lease_token="")
            event_emit(job_id=job_id, type="artifact.failed", payload={"kind": unit.kind, "error": error})
            return
        # Only the lease holder stores and records: a worker that was replaced writes nothing.
        job, version, made, started = outcome.value
        for preview_kind, pages in made.previews.items():
            storage.previews_replace(job_id, preview_kind, pages)
        for art_kind, name, path in made.files:
            art = artifact_save_file(job=job, kind=art_kind, name=name, path=path, meta=made.meta.get(name, {}))
            event_emit(job_id=job_id, type="artifact.ready",
                       payload={"kind": art_kind, "name": name, "size": art.size,
                                "seconds": round(time.monotonic() - started, 2)})
        OutputRender.objects.filter(pk=unit.pk).update(status=OutputStatus.DONE, error="", lease_until=None,
                                                       lease_token="", report_version=version)

    def after_end(self, job_id: int, unit: OutputRender, *, written: bool) -> None:
        if written:
            job_finish_if_rendered(job_id=job_id)

    def lost(self, stale: datetime) -> QuerySet[OutputRender]:
        return self.queryset().filter(status=OutputStatus.PENDING, job__status=JobStatus.RENDERING,
                                      updated__lt=stale)

    def requeue_fields(self, unit: OutputRender, at: datetime) -> dict[str, Any]:
        return {"status": OutputStatus.PENDING}

    def send(self, unit: OutputRender) -> None:
        enqueue_render(unit.job_id, unit.kind)


RENDERS_KIND = _Renders()


def render_claim(job_id: int, kind: str) -> tuple[OutputRender, str] | None:
    claim = RENDERS_KIND.claim(job_id=job_id, kind=kind)
    return None if claim is None else (claim.unit, claim.token)


def output_render(*, job_id: int, kind: str) -> None:
    unit_run(RENDERS_KIND, _render_work, job_id=job_id, kind=kind)


def _render_work(claim: Claim[OutputRender]) -> tuple[ResearchJob, int, _Made, float]:
    """Render the output into the claim's work folder; `write` stores it, if this worker still holds it."""
    job = ResearchJob.objects.get(pk=claim.job_id)
    version = job.report_versions.order_by("-number").first()
    if version is None:
        raise ValueError("there is no report to render")
    started = time.monotonic()
    return job, version.number, _render(job, claim.unit.kind, version.markdown, claim.scratch), started


def job_finish_if_rendered(*, job_id: int) -> None:
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=now())
        job = ResearchJob.objects.get(pk=job_id)
        if job.status != JobStatus.RENDERING:
            return
        rows = list(job.renders.all())
        if any(r.status in (OutputStatus.PENDING, OutputStatus.RUNNING) for r in rows):
            return
        failed = [r for r in rows if r.status == OutputStatus.FAILED]
        if failed:
            error = "; ".join(f"{r.kind} failed: {r.error}" for r in failed)
            job_set_status(job=job, status=JobStatus.FAILED, error=error)
        else:
            job_set_status(job=job, status=JobStatus.DONE, error="")
