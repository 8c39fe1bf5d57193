"""What the job page shows in-page: the podcast with its chapters, PDF page thumbnails, slide thumbnails.

Everything here was made by the render (research/jobs/units/renders.py) and is read from the database and the
storage, so any web host answers the same and a page view never opens an MP3, a PDF or a deck.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from research.jobs import storage
from research.jobs.models import ResearchJob
from research.render.formats import output_formats


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
    # Thumbnails are stored as previews/<preview_kind>-NN.png, the prefix each format declares.
    with_previews = [f for f in output_formats() if f.preview_kind and f.files[0].kind in arts]
    if with_previews:
        names = storage.previews_list(job.pk)  # one listing for every kind
        thumbs = {f.kind: [reverse("job_preview", args=[job.pk, n]) for n in names
                           if n.startswith(f"{f.preview_kind}-")] for f in with_previews}
        if "pdf" in thumbs:
            media["pdf"] = thumbs["pdf"]
        if "pptx" in thumbs:
            media["slides"] = thumbs["pptx"]
            if not media["slides"]:  # no LibreOffice on the render host: the titles still give the outline
                media["slide_titles"] = list((arts["pptx"].meta or {}).get("slide_titles") or [])
    return media
