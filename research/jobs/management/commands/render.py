"""`manage.py render REPORT.md --formats pdf,pptx,podcast --out DIR` (contract: docs/architecture.md, "CLI").

Renders any Markdown report without Redis, Celery or the database. Every requested
format is attempted; the command exits non-zero if any of them failed.
"""

from __future__ import annotations

import time
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from research.agents.text import detect_locale
from research.render.html import markdown_title

FORMATS = ("pdf", "pptx", "podcast")


class Command(BaseCommand):
    help = "Render a Markdown report to PDF, PPTX and/or a podcast (MP3 + transcript)."
    requires_system_checks: list[str] = []  # no database or app state needed

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("report", help="path to the Markdown report")
        parser.add_argument("--formats", default="pdf,pptx,podcast", help="comma-separated: pdf,pptx,podcast")
        parser.add_argument("--out", default=None, help="output directory (default: next to the report)")
        parser.add_argument("--locale", default=None, help="e.g. en-US or zh-CN (default: detected from the text)")
        parser.add_argument("--figures", default=None, help="figures directory (default: REPORT_DIR/figures)")
        parser.add_argument("--tts", default=None, help="TTS backend: auto, edge, espeak, flite (default: setting)")

    def handle(self, *args: Any, **options: Any) -> None:
        report = Path(options["report"]).expanduser()
        if not report.is_file():
            raise CommandError(f"report not found: {report}")
        formats = [f.strip().lower() for f in str(options["formats"]).split(",") if f.strip()]
        unknown = sorted(set(formats) - set(FORMATS))
        if unknown or not formats:
            raise CommandError(f"unknown format(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(FORMATS)}")
        try:
            markdown = report.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {report}: {exc}") from exc
        out_dir = Path(options["out"]).expanduser() if options["out"] else report.parent
        out_dir.mkdir(parents=True, exist_ok=True)
        locale = options["locale"] or detect_locale(markdown)
        # Figures are referenced as `figures/x.png`, relative to the report's own directory.
        figures = Path(options["figures"]) if options["figures"] else report.resolve().parent / "figures"
        figures_dir = figures if figures.is_dir() else None
        stem = report.stem
        title = markdown_title(markdown, default=stem)

        # Renderers are imported when used: WeasyPrint alone takes a second or two to import.
        def pdf() -> list[Path]:
            from research.render.pdf import render_pdf

            return [render_pdf(markdown, out_dir / f"{stem}.pdf", title=title, figures_dir=figures_dir, locale=locale)]

        def pptx() -> list[Path]:
            from research.render.pptx import render_pptx

            return [render_pptx(markdown, out_dir / f"{stem}.pptx", figures_dir=figures_dir, locale=locale)]

        def podcast() -> list[Path]:
            from research.render.derive import podcast_script_from_markdown
            from research.render.podcast import render_podcast
            from research.render.tts import choose_backend

            script = podcast_script_from_markdown(markdown, locale=locale)
            backend = choose_backend(options["tts"], locale)
            result = render_podcast(script, out_dir, basename=stem, backend=backend)
            self.stdout.write(
                f"podcast: {result.duration_s:.1f}s via {result.backend}, {len(result.chapters)} chapters"
            )
            return [result.mp3, result.transcript_txt, result.transcript_vtt]

        renderers: dict[str, Callable[[], list[Path]]] = {"pdf": pdf, "pptx": pptx, "podcast": podcast}
        failed: list[str] = []
        for fmt in dict.fromkeys(formats):
            started = time.monotonic()
            try:
                paths = renderers[fmt]()
            except Exception as exc:  # report and go on: every format is attempted
                failed.append(fmt)
                self.stderr.write(f"{fmt} failed: {type(exc).__name__}: {exc}")
                continue
            for path in paths:
                self.stdout.write(str(path))
            self.stderr.write(f"{fmt} done in {time.monotonic() - started:.1f}s (locale {locale})")
        if failed:
            raise CommandError(f"failed format(s): {', '.join(failed)}")
