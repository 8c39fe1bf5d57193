"""Rendering a job's outputs (the registered formats: PDF, PPTX, podcast) from its latest report, one unit per kind.

Everything the job page shows is made here, once, and kept in the storage with the files: the PDF's
page thumbnails, the deck's slide thumbnails (previews/), the podcast's chapters (Artifact.meta). A
page view then reads the storage and the database only, on any web host.

services.renders_queue() queues them; the last render to end moves the job to done or failed.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from research.jobs import storage
from research.jobs.artifacts import artifact_save_file
from research.jobs.events import event_emit
from research.jobs.models import JobStatus, OutputRender, OutputStatus, ResearchJob
from research.jobs.states import job_set_status
from research.jobs.units.common import engine_for, now, short
from research.jobs.units.context import JobContext
from research.jobs.units.leases import LeaseLost, lease_deadline, lease_kept
from research.render.formats import RenderRequest, output_format, previews_safely

logger = logging.getLogger(__name__)

def render_claim(job_id: int, kind: str) -> tuple[OutputRender, str] | None:
    with transaction.atomic():
        ResearchJob.objects.filter(pk=job_id).update(updated=now())
        row = OutputRender.objects.filter(job_id=job_id, kind=kind).first()
        if row is None or row.status in (OutputStatus.DONE, OutputStatus.FAILED):
            return None
        if row.status == OutputStatus.RUNNING and row.lease_until and row.lease_until > now():
            return None
        if row.attempts >= settings.STEP_MAX_ATTEMPTS:
            OutputRender.objects.filter(pk=row.pk).update(
                status=OutputStatus.FAILED, error=f"gave up after {row.attempts} attempts (worker lost)")
            job_finish_if_rendered(job_id=job_id)
            return None
        token = uuid.uuid4().hex
        OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.RUNNING, attempts=row.attempts + 1,
                                                      lease_until=now() + lease_deadline(), lease_token=token)
        event_emit(job_id=job_id, type="artifact.started", payload={"kind": kind})
        return row, token


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


def _render_holder(row: OutputRender, token: str) -> None:
    """Inside the transaction that writes the outcome: lock the row and make sure it is still ours."""
    if not OutputRender.objects.select_for_update().filter(pk=row.pk, lease_token=token).exists():
        raise LeaseLost(f"the {row.kind} render of job {row.job_id} passed to another worker")


def output_render(*, job_id: int, kind: str) -> None:
    claimed = render_claim(job_id, kind)
    if claimed is None:
        return
    row, token = claimed
    job = ResearchJob.objects.get(pk=job_id)
    version = job.report_versions.order_by("-number").first()
    with lease_kept(OutputRender, row.pk, "lease_until", token_field="lease_token", token=token):  # noqa: S106
        try:
            if version is None:
                raise ValueError("there is no report to render")
            started = time.monotonic()
            with storage.work_dir(f"render-{job_id}-{kind}") as tmp:
                made = _render(job, kind, version.markdown, tmp)
                with transaction.atomic():
                    # Only the lease holder stores and records: a worker that was replaced writes nothing.
                    _render_holder(row, token)
                    for preview_kind, pages in made.previews.items():
                        storage.previews_replace(job_id, preview_kind, pages)
                    for art_kind, name, path in made.files:
                        art = artifact_save_file(job=job, kind=art_kind, name=name, path=path,
                                                 meta=made.meta.get(name, {}))
                        event_emit(job_id=job_id, type="artifact.ready",
                                   payload={"kind": art_kind, "name": name, "size": art.size,
                                            "seconds": round(time.monotonic() - started, 2)})
                    OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.DONE, error="",
                                                                  lease_until=None, lease_token="",
                                                                  report_version=version.number)
        except LeaseLost:
            logger.warning("the %s render of job %s passed to another worker; this one stops", kind, job_id)
            return
        except Exception as exc:
            logger.exception("rendering %s of job %s failed", kind, job_id)
            with transaction.atomic():
                if not OutputRender.objects.select_for_update().filter(pk=row.pk, lease_token=token).exists():
                    return  # replaced meanwhile: the new holder reports
                OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.FAILED, error=short(exc),
                                                              lease_until=None, lease_token="")
                event_emit(job_id=job_id, type="artifact.failed", payload={"kind": kind, "error": short(exc)})
    job_finish_if_rendered(job_id=job_id)


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
