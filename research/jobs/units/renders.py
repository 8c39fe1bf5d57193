"""Rendering a job's outputs (PDF, PPTX, podcast) from its latest report version, one unit per kind.

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

logger = logging.getLogger(__name__)

PDF_PREVIEW_PAGES = 3  # thumbnails of the PDF's first pages on the job page


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
    """Render one output into workdir."""
    # Reports say figures/<name> and the renderers take bare names: fetch the job's figures from the
    # storage into this worker's temp dir and hand over their folder.
    figures_dir = storage.files_fetch(job.pk, workdir / "job") / "figures"
    engine = engine_for(job)
    ctx = JobContext(job)
    if kind == "pdf":
        from research.render.pdf import render_pdf

        out = render_pdf(markdown, workdir / "report.pdf", title=job.title or None, figures_dir=figures_dir,
                         locale=job.locale)
        return _Made([("pdf", "report.pdf", out)], {"pdf": _pdf_pages(job, out, workdir / "previews")})
    if kind == "pptx":
        from research.render.pptx import render_pptx

        outline = engine.slide_outline(ctx, markdown)
        out = render_pptx(markdown, workdir / "slides.pptx", outline=outline, figures_dir=figures_dir,
                          locale=job.locale)
        return _Made([("pptx", "slides.pptx", out)], {"slide": _slide_pages(job, out, workdir / "previews")},
                     meta={"slides.pptx": {"slide_titles": _slide_titles(out)}})
    if kind == "podcast":
        from research.render.podcast import render_podcast

        script = engine.podcast_script(ctx, markdown)
        res = render_podcast(script, workdir, basename="podcast")
        # The job page lists the chapters from here: a page view never opens the MP3.
        chapters = [{"start": round(c.start_s, 2), "end": round(c.end_s, 2), "title": c.title} for c in res.chapters]
        return _Made([("podcast", "podcast.mp3", res.mp3), ("transcript", "podcast.txt", res.transcript_txt),
                      ("vtt", "podcast.vtt", res.transcript_vtt)],
                     meta={"podcast.mp3": {"chapters": chapters, "duration_s": round(res.duration_s, 2)}})
    raise ValueError(f"unknown output {kind}")


def _pdf_pages(job: ResearchJob, pdf: Path, out_dir: Path) -> list[Path]:
    """PNG thumbnails of the PDF's first pages (pdftoppm); the PDF itself never depends on them."""
    from research.render.preview import PreviewError, pdf_to_png

    try:
        return pdf_to_png(pdf, out_dir, pages=PDF_PREVIEW_PAGES, dpi=40)
    except (PreviewError, OSError) as exc:
        logger.warning("no PDF previews for job %s: %s", job.pk, exc)
        return []


def _slide_pages(job: ResearchJob, deck: Path, out_dir: Path) -> list[Path]:
    """PNG thumbnails of the deck (LibreOffice); the deck itself never depends on them."""
    from research.render.preview import PreviewError, slides_to_png

    try:
        return slides_to_png(deck, out_dir, width_px=480)
    except (PreviewError, OSError) as exc:
        logger.warning("no slide previews for job %s: %s", job.pk, exc)
        return []


def _slide_titles(deck: Path) -> list[str]:
    """Each slide's title, for the job page's outline where no thumbnails could be made (no LibreOffice)."""
    from pptx import Presentation

    titles = []
    for slide in Presentation(str(deck)).slides:
        shape = slide.shapes.title
        titles.append(shape.text_frame.text.strip() if shape is not None and shape.has_text_frame else "")
    return titles


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
