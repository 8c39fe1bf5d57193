"""PDF (WeasyPrint, research/render/pdf.py), with thumbnails of its first pages for the job page."""

from __future__ import annotations

from pathlib import Path

from research.render.formats.base import OutputFile, OutputFormat, Rendered, RenderRequest, register
from research.render.formats.base import translated as _

PREVIEW_PAGES = 3  # thumbnails of the PDF's first pages on the job page


def _render(req: RenderRequest) -> Rendered:
    from research.render.pdf import render_pdf  # WeasyPrint takes a second or two to import

    out = render_pdf(req.markdown, req.path(PDF, PDF.files[0]), title=req.title, figures_dir=req.figures_dir,
                     locale=req.locale)
    return Rendered([out])


def _preview(made: Rendered, out_dir: Path) -> list[Path]:
    from research.render.preview import pdf_to_png

    return pdf_to_png(made.paths[0], out_dir, pages=PREVIEW_PAGES, dpi=40)


PDF = register(OutputFormat(
    kind="pdf", label="PDF", short_label=_("PDF"), basename="report",
    files=(OutputFile("pdf", ".pdf", "application/pdf"),),
    render=_render, preview=_preview, preview_kind="pdf", order=10,
))
