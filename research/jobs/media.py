"""What the job page shows in-page: the podcast with its chapters, PDF page thumbnails, slide titles."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.urls import reverse

from research.jobs.models import Artifact, ResearchJob

PDF_PREVIEW_PAGES = 3


@contextmanager
def _local_copy(art: Artifact) -> Iterator[Path]:
    """The artifact as a local file: its own path on the local disk, else a temp copy from the storage."""
    try:
        yield Path(art.file.path)
        return
    except NotImplementedError:  # object storage has no local path
        pass
    suffix = Path(art.name).suffix
    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp, art.file.open("rb") as source:
        shutil.copyfileobj(source, tmp)
        tmp.flush()
        yield Path(tmp.name)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60:d}:{s % 60:02d}"


def podcast_chapters(path: Path) -> list[dict[str, Any]]:
    """The ID3 CHAP frames the podcast renderer wrote (start seconds, title)."""
    from mutagen.id3 import ID3, ID3NoHeaderError

    try:
        tags = ID3(path)
    except (ID3NoHeaderError, OSError):
        return []
    out = []
    for frame in tags.getall("CHAP"):
        title = ""
        for sub in frame.sub_frames.values():
            if getattr(sub, "FrameID", "") == "TIT2":
                title = str(sub.text[0]) if sub.text else ""
        start = frame.start_time / 1000
        out.append({"start": round(start, 2), "clock": _clock(start), "title": title})
    return sorted(out, key=lambda c: c["start"])


def preview_dir(job_id: int) -> Path:
    return Path(settings.MEDIA_ROOT) / "jobs" / str(job_id) / "previews"


def pdf_thumbnails(job: ResearchJob, art: Artifact) -> list[str]:
    """First pages of the PDF as small PNGs (pdftoppm), made once per PDF version and kept."""
    out = preview_dir(job.pk)
    stamp = f"pdf-{art.sha256[:12]}"
    existing = sorted(out.glob(f"{stamp}-*.png"))
    if not existing:
        out.mkdir(parents=True, exist_ok=True)
        try:
            with _local_copy(art) as pdf:
                subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", str(PDF_PREVIEW_PAGES),
                                str(pdf), str(out / stamp)], check=True, timeout=60, capture_output=True)
        except (OSError, subprocess.SubprocessError):
            return []
        existing = sorted(out.glob(f"{stamp}-*.png"))
    return [reverse("job_preview", args=[job.pk, p.name]) for p in existing]


def slide_titles(art: Artifact) -> list[str]:
    from pptx import Presentation

    try:
        with _local_copy(art) as path:
            deck = Presentation(str(path))
    except Exception:  # a broken deck shows no preview; the download still works
        return []
    titles = []
    for slide in deck.slides:
        shape = slide.shapes.title
        titles.append(shape.text_frame.text.strip() if shape is not None and shape.has_text_frame else "")
    return titles


def job_media(*, job: ResearchJob) -> dict[str, Any]:
    arts = {a.kind: a for a in job.artifacts.exclude(kind="figure")}
    media: dict[str, Any] = {}
    if "podcast" in arts:
        a = arts["podcast"]
        try:
            with _local_copy(a) as mp3:
                chapters = podcast_chapters(mp3)
        except OSError:
            chapters = []
        media["podcast"] = {"url": reverse("artifact_download", args=[job.pk, a.name]) + "?inline=1",
                            "chapters": chapters}
    if "pdf" in arts:
        media["pdf"] = pdf_thumbnails(job, arts["pdf"])
    if "pptx" in arts:
        from research.jobs import storage

        media["slides"] = [reverse("job_preview", args=[job.pk, name])
                           for name in storage.slide_previews_list(job.pk)]
        if not media["slides"]:  # no LibreOffice on the render host: the titles still give the outline
            media["slide_titles"] = slide_titles(arts["pptx"])
    return media
