"""`manage.py render REPORT.md --formats pdf,pptx,podcast --out DIR` (contract: docs/architecture.md, "CLI").

Renders any Markdown report without Redis, Celery or the database. Every requested
format is attempted; the command exits non-zero if any of them failed.
"""

from __future__ import annotations

import time
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from research.agents.text import detect_locale
from research.render.formats import OutputFormat, RenderRequest, output_format, rendered_kinds
from research.render.html import markdown_title


class Command(BaseCommand):
    help = "Render a Markdown report to PDF, PPTX and/or a podcast (MP3 + transcript)."
    requires_system_checks: list[str] = []  # no database or app state needed

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("report", help="path to the Markdown report")
        kinds = ",".join(rendered_kinds())
        parser.add_argument("--formats", default=kinds, help=f"comma-separated: {kinds}")
        parser.add_argument("--out", default=None, help="output directory (default: next to the report)")
        parser.add_argument("--locale", default=None, help="e.g. en-US or zh-CN (default: detected from the text)")
        parser.add_argument("--figures", default=None, help="figures directory (default: REPORT_DIR/figures)")
        parser.add_argument("--tts", default=None, help="TTS backend: auto, edge, espeak, flite (default: setting)")

    def handle(self, *args: Any, **options: Any) -> None:
        report = Path(options["report"]).expanduser()
        if not report.is_file():
            raise CommandError(f"report not found: {report}")
        formats = [f.strip().lower() for f in str(options["formats"]).split(",") if f.strip()]
        known = rendered_kinds()
        unknown = sorted(set(formats) - set(known))
        if unknown or not formats:
            raise CommandError(f"unknown format(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
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

        # Each format's module imports its renderer when used: WeasyPrint alone takes a second or two.
        def render(fmt: OutputFormat) -> list[Path]:
            if fmt.render is None:  # only rendered kinds pass the check above
                raise CommandError(f"{fmt.kind} is not rendered")
            req = RenderRequest(markdown=markdown, out_dir=out_dir, locale=locale, title=title,
                                figures_dir=figures_dir, stem=stem, options={"tts": options["tts"]},
                                say=self.stdout.write)
            return fmt.render(req).paths

        failed: list[str] = []
        for fmt in dict.fromkeys(formats):
            started = time.monotonic()
            try:
                paths = render(output_format(fmt))
            except Exception as exc:  # report and go on: every format is attempted
                failed.append(fmt)
                self.stderr.write(f"{fmt} failed: {type(exc).__name__}: {exc}")
                continue
            for path in paths:
                self.stdout.write(str(path))
            self.stderr.write(f"{fmt} done in {time.monotonic() - started:.1f}s (locale {locale})")
        if failed:
            raise CommandError(f"failed format(s): {', '.join(failed)}")
