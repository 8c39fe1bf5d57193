"""Rendering a job's outputs (PDF, PPTX, podcast) from its latest report version, one unit per kind.

services.renders_queue() queues them; the last render to end moves the job to done or failed.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction

from research.jobs import storage
from research.jobs.artifacts import artifact_save_file
from research.jobs.context import JobContext
from research.jobs.events import event_emit
from research.jobs.leases import lease_deadline, lease_kept
from research.jobs.models import JobStatus, OutputRender, OutputStatus, ResearchJob
from research.jobs.states import job_set_status
from research.jobs.units import engine_for, now, short

logger = logging.getLogger(__name__)


def render_claim(job_id: int, kind: str) -> OutputRender | None:
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
        OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.RUNNING, attempts=row.attempts + 1,
                                                      lease_until=now() + lease_deadline())
        event_emit(job_id=job_id, type="artifact.started", payload={"kind": kind})
        return row


def _render(job: ResearchJob, kind: str, markdown: str, workdir: Path) -> list[tuple[str, str, Path]]:
    """Render one output into workdir; returns (kind, name, path) for each file made."""
    # Reports say figures/<name> and the renderers take bare names: fetch the job's figures from the
    # storage into this worker's temp dir and hand over their folder.
    figures_dir = storage.files_fetch(job.pk, workdir / "job") / "figures"
    engine = engine_for(job)
    ctx = JobContext(job)
    if kind == "pdf":
        from research.render.pdf import render_pdf

        out = render_pdf(markdown, workdir / "report.pdf", title=job.title or None, figures_dir=figures_dir,
                         locale=job.locale)
        return [("pdf", "report.pdf", out)]
    if kind == "pptx":
        from research.render.pptx import render_pptx

        outline = engine.slide_outline(ctx, markdown)
        out = render_pptx(markdown, workdir / "slides.pptx", outline=outline, figures_dir=figures_dir,
                          locale=job.locale)
        _slide_previews_store(job, out, workdir / "previews")
        return [("pptx", "slides.pptx", out)]
    if kind == "podcast":
        from research.render.podcast import render_podcast

        script = engine.podcast_script(ctx, markdown)
        res = render_podcast(script, workdir, basename="podcast")
        return [("podcast", "podcast.mp3", res.mp3), ("transcript", "podcast.txt", res.transcript_txt),
                ("vtt", "podcast.vtt", res.transcript_vtt)]
    raise ValueError(f"unknown output {kind}")


def _slide_previews_store(job: ResearchJob, deck: Path, out_dir: Path) -> None:
    """PNG thumbnails of the deck for the job page (LibreOffice); the deck itself never depends on them."""
    from research.render.preview import PreviewError, slides_to_png

    try:
        pages = slides_to_png(deck, out_dir, width_px=480)
    except (PreviewError, OSError) as exc:
        logger.warning("no slide previews for job %s: %s", job.pk, exc)
        return
    for name in storage.slide_previews_list(job.pk):  # a re-render may have fewer slides
        storage.file_delete(storage.artifact_key(job.pk, storage.SLIDE_PREVIEWS + name))
    for page in pages:
        storage.file_store(key=storage.artifact_key(job.pk, storage.SLIDE_PREVIEWS + page.name), path=page)


def output_render(*, job_id: int, kind: str) -> None:
    row = render_claim(job_id, kind)
    if row is None:
        return
    job = ResearchJob.objects.get(pk=job_id)
    version = job.report_versions.order_by("-number").first()
    with lease_kept(OutputRender, row.pk, "lease_until"):
        try:
            if version is None:
                raise ValueError("there is no report to render")
            started = time.monotonic()
            with storage.work_dir(f"render-{job_id}-{kind}") as tmp:
                made = _render(job, kind, version.markdown, tmp)
                with transaction.atomic():
                    for art_kind, name, path in made:
                        art = artifact_save_file(job=job, kind=art_kind, name=name, path=path)
                        event_emit(job_id=job_id, type="artifact.ready",
                                   payload={"kind": art_kind, "name": name, "size": art.size,
                                            "seconds": round(time.monotonic() - started, 2)})
                    OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.DONE, error="",
                                                                  lease_until=None, report_version=version.number)
        except Exception as exc:
            logger.exception("rendering %s of job %s failed", kind, job_id)
            with transaction.atomic():
                OutputRender.objects.filter(pk=row.pk).update(status=OutputStatus.FAILED, error=short(exc),
                                                              lease_until=None)
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
