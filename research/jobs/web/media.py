"""What the job page shows in-page: the podcast with its chapters, PDF page thumbnails, slide thumbnails.

Everything here was made by the render (research/jobs/units/renders.py) and is read from the database and the
storage, so any web host answers the same and a page view never opens an MP3, a PDF or a deck.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from research.jobs import storage
from research.jobs.models import ResearchJob


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60:d}:{s % 60:02d}"


def podcast_chapters(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The chapters the render stored with the podcast (start seconds, title); none for podcasts made
    before chapters were stored (re-render to get them)."""
    out = []
    for chapter in meta.get("chapters") or []:
        start = float(chapter.get("start") or 0.0)
        out.append({"start": round(start, 2), "clock": _clock(start), "title": str(chapter.get("title") or "")})
    return sorted(out, key=lambda c: c["start"])


def job_media(*, job: ResearchJob) -> dict[str, Any]:
    arts = {a.kind: a for a in job.artifacts.exclude(kind="figure")}
    media: dict[str, Any] = {}
    if "podcast" in arts:
        a = arts["podcast"]
        media["podcast"] = {"url": reverse("artifact_download", args=[job.pk, a.name]) + "?inline=1",
                            "chapters": podcast_chapters(a.meta or {})}
    if "pdf" in arts or "pptx" in arts:
        previews = storage.previews_list(job.pk)  # one listing for both kinds
        if "pdf" in arts:
            media["pdf"] = [reverse("job_preview", args=[job.pk, n]) for n in previews if n.startswith("pdf-")]
        if "pptx" in arts:
            media["slides"] = [reverse("job_preview", args=[job.pk, n]) for n in previews if n.startswith("slide-")]
            if not media["slides"]:  # no LibreOffice on the render host: the titles still give the outline
                media["slide_titles"] = list((arts["pptx"].meta or {}).get("slide_titles") or [])
    return media
