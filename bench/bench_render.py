"""Rendering: PDF, PPTX and podcast of one long Markdown report, timed in this process.

The report is built from the local test site's English articles: sections of paragraphs with
numbered citations, bullet lists, one table per few sections and a references list, about
`words` words in all (counted as whitespace-separated words). The podcast uses the offline TTS
(espeak-ng) and the same path as `manage.py render` (script derived from the report, then
TTS per line in parallel, one ffmpeg encode); podcast_audio_s is the length of the audio it made.
Each renderer is timed on its first call in a process that has already imported it.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any


def make_report(words: int) -> str:
    """A report of about `words` words, with the structure a reporter writes."""
    from tests.support.site import PAGES

    pages = [p for p in PAGES if p.lang == "en" and p.kind == "html"]
    parts = ["# Energy transition: costs, storage and heat", "",
             "This report summarises what the sources say about solar power, batteries and heat pumps.", ""]
    count = sum(len(p.split()) for p in parts)
    section = 0
    while count < words:
        page = pages[section % len(pages)]
        section += 1
        body = [f"## {section}. {page.title}", ""]
        for index, paragraph in enumerate(page.paragraphs):
            body += [f"{paragraph} [{section % 12 + 1}]", ""]
            if index == 1:
                body += [f"- {s.strip()}." for s in paragraph.split(". ")[:3] if s.strip()] + [""]
        if section % 3 == 0:
            body += ["| Year | Value | Change |", "|---|---|---|", "| 2010 | 100 | — |", "| 2020 | 45 | -55% |",
                     "| 2024 | 30 | -33% |", ""]
        count += sum(len(line.split()) for line in body)
        parts += body
    # The references list as research.report.citations.finalize_report writes it.
    parts += ["## References", ""] + [f"- [{n}] [Source {n}](https://example.org/source-{n})" for n in range(1, 13)]
    return "\n".join(parts) + "\n"


def run(*, words: int = 5000) -> dict[str, Any]:
    from research.render.pdf import render_pdf
    from research.render.podcast import render_podcast
    from research.render.podcast_script import podcast_script_from_markdown
    from research.render.pptx import render_pptx
    from research.render.preview import previews_available, slides_to_png
    from research.render.tts import choose_backend

    markdown = make_report(words)
    counted = len(markdown.split())
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        out = Path(tmp)
        started = time.monotonic()
        pdf = render_pdf(markdown, out / "report.pdf", title=None, figures_dir=None, locale="en-US")
        pdf_s = time.monotonic() - started
        started = time.monotonic()
        pptx = render_pptx(markdown, out / "slides.pptx", figures_dir=None, locale="en-US")
        pptx_s = time.monotonic() - started
        preview_s, slides = None, 0
        if previews_available():
            started = time.monotonic()
            slides = len(slides_to_png(pptx, out / "preview"))
            preview_s = time.monotonic() - started
        started = time.monotonic()
        backend = choose_backend("espeak", "en-US")
        script = podcast_script_from_markdown(markdown, locale="en-US")
        podcast = render_podcast(script, out, basename="podcast", backend=backend)
        podcast_s = time.monotonic() - started
        sizes = {"pdf_bytes": pdf.stat().st_size, "pptx_bytes": pptx.stat().st_size,
                 "mp3_bytes": podcast.mp3.stat().st_size}
    return {
        "words": counted,
        "pdf_s": round(pdf_s, 3),
        "pptx_s": round(pptx_s, 3),
        "preview_s": None if preview_s is None else round(preview_s, 3),
        "slides": slides,
        "podcast_s": round(podcast_s, 3),
        "podcast_audio_s": round(podcast.duration_s, 2),
        "podcast_realtime_x": round(podcast.duration_s / podcast_s, 1),  # goal >= 100
        "podcast_lines": len(script.lines),
        "tts_backend": podcast.backend,
        **sizes,
    }


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("report", f"{result['words']:,} words"),
        ("PDF (WeasyPrint)", f"{result['pdf_s']:.2f} s ({result['pdf_bytes'] // 1024} KiB)"),
        ("PPTX (python-pptx)", f"{result['pptx_s']:.2f} s ({result['pptx_bytes'] // 1024} KiB)"),
        ("slide previews (LibreOffice + pdftoppm)", "not installed" if result["preview_s"] is None
         else f"{result['preview_s']:.2f} s for {result['slides']} slides"),
        ("podcast (offline TTS + ffmpeg)", f"{result['podcast_s']:.2f} s for {result['podcast_audio_s']:.0f} s of "
                                           f"audio ({result['podcast_realtime_x']:.0f}× real time; goal ≥ 100), "
                                           f"{result['podcast_lines']} lines via {result['tts_backend']}"),
    ]
