"""Rendering a job's outputs (PDF, PPTX, podcast) from its latest report version, one unit per kind.

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

logger = logging.getLogger(__name__)

PDF_PREVIEW_PAGES = 3  # thumbnails of the PDF's first pages on the job page


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
