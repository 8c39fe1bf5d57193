"""Slides (python-pptx, research/render/pptx.py), with a thumbnail per slide and the slide titles."""

from __future__ import annotations

from pathlib import Path

from research.render.formats.base import OutputFile, OutputFormat, Rendered, RenderRequest, register
from research.render.formats.base import translated as _

PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


def _render(req: RenderRequest) -> Rendered:
    from research.render.pptx import render_pptx

    # A job's engine writes the outline (the model's, or derived offline); the CLI lets the renderer derive it.
    outline = req.engine.slide_outline(req.ctx, req.markdown) if req.engine and req.ctx else None
    out = render_pptx(req.markdown, req.path(PPTX, PPTX.files[0]), outline=outline, figures_dir=req.figures_dir,
                      locale=req.locale)
    return Rendered([out], meta={"slide_titles": slide_titles(out)})


def slide_titles(deck: Path) -> list[str]:
    """Each slide's title, for the job page's outline where no thumbnails could be made (no LibreOffice)."""
    from pptx import Presentation

    titles = []
    for slide in Presentation(str(deck)).slides:
        shape = slide.shapes.title
        titles.append(shape.text_frame.text.strip() if shape is not None and shape.has_text_frame else "")
    return titles


def _preview(made: Rendered, out_dir: Path) -> list[Path]:
    from research.render.preview import slides_to_png

    return slides_to_png(made.paths[0], out_dir, width_px=480)


PPTX = register(OutputFormat(
    kind="pptx", label=_("Slides (PPTX)"), short_label=_("slides"), basename="slides",
    files=(OutputFile("pptx", ".pptx", PPTX_MIME),),
    render=_render, preview=_preview, preview_kind="slide", order=20,
))
