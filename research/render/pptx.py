"""Markdown report (or a SlideOutline) → 16:9 PPTX with python-pptx.

Text never overflows its box: every text frame is laid out with a measured line-wrap
(Pillow + real font files: Liberation Sans, metric-compatible with the Arial named in the
file, and Noto Sans CJK for Chinese). Font sizes shrink, then bullets are shortened,
until the measured height fits. `check_presentation()` re-measures a saved file so tests
(and anyone else) can verify it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lxml import etree
from PIL import Image, ImageFont
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.shapes import MSO_SHAPE
from pptx.enum.text import MSO_ANCHOR, MSO_AUTO_SIZE, PP_ALIGN
from pptx.oxml.ns import qn
from pptx.presentation import Presentation as PresentationType
from pptx.slide import Slide as PptxSlide
from pptx.table import Table
from pptx.text.text import TextFrame
from pptx.util import Emu, Inches, Pt

from research import scripts, textre
from research.agents.text import is_chinese
from research.agents.types import Slide, SlideOutline
from research.render.derive import reference_items, shorten, slide_outline
from research.report.document import ReportDocument, parse_report
from research.report.links import safe_figure_name
from research.report.references import is_references_heading

SLIDE_W = Inches(13.333)
SLIDE_H = Inches(7.5)
MAX_BULLETS = 5
LINE_SPACING = 1.2  # exact line pitch as a multiple of the font size; set on every paragraph
FIT_SAFETY = 1.04  # renderers differ slightly in kerning/hinting: demand 4% headroom in width
LATIN_FONT = "Arial"  # measured with Liberation Sans, which has the same metrics
CJK_FONT = "Noto Sans CJK SC"
MARGIN_X = Inches(0.1)  # text-frame insets, set explicitly so the measurement knows them
MARGIN_Y = Inches(0.05)

_FONT_DIRS = (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"), Path.home() / ".fonts")
_LATIN_FILES = {False: ("LiberationSans-Regular.ttf", "Arial.ttf", "DejaVuSans.ttf"),
                True: ("LiberationSans-Bold.ttf", "Arial_Bold.ttf", "DejaVuSans-Bold.ttf")}  # fmt: skip
_CJK_FILES = {False: ("NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular.otf"),
              True: ("NotoSansCJK-Bold.ttc", "NotoSansCJKsc-Bold.otf")}  # fmt: skip
_CJK_RE = textre.compile(f"[{scripts.CJK_FONT}]")
_MEASURE_PX = 100  # measure at 100 px and scale: widths are linear in size

NAVY = RGBColor(0x1E, 0x29, 0x3B)
BODY = RGBColor(0x33, 0x41, 0x55)
MUTED = RGBColor(0x64, 0x74, 0x8B)
ACCENT = RGBColor(0x25, 0x63, 0xEB)
TABLE_HEAD = RGBColor(0xE2, 0xE8, 0xF0)
WHITE = RGBColor(0xFF, 0xFF, 0xFF)


# ---------------------------------------------------------------- measurement


@lru_cache(maxsize=8)
def _font_file(names: tuple[str, ...]) -> Path | None:
    for name in names:
        for root in _FONT_DIRS:
            if root.is_dir():
                found = next(root.rglob(name), None)
                if found:
                    return found
    return None


@lru_cache(maxsize=8)
def _font(cjk: bool, bold: bool) -> ImageFont.FreeTypeFont | None:
    path = _font_file((_CJK_FILES if cjk else _LATIN_FILES)[bold])
    if path is None:
        return None
    # In the Noto CJK collection, face 2 is Simplified Chinese.
    index = 2 if path.suffix == ".ttc" else 0
    return ImageFont.truetype(str(path), _MEASURE_PX, index=index)


_RUN_RE = textre.compile(f"[{scripts.CJK_FONT}]+|[^{scripts.CJK_FONT}]+")
# Break opportunities: after spaces for Latin, between CJK characters (closing punctuation stays attached).
_TOKEN_RE = textre.compile(
    f"[{scripts.CJK_FONT}]" r"[\uff0c\u3002\uff1b\uff1a\uff01\uff1f\u3001\uff09\u300b\u201d]*"
    f"|[^\\s{scripts.CJK_FONT}]+\\s*|\\s+"
)


@lru_cache(maxsize=65536)
def _unit_width(text: str, bold: bool) -> float:
    """Width of `text` at 1 pt, CJK runs measured with the CJK font and the rest with the Latin font."""
    total = 0.0
    for run in _RUN_RE.findall(text):
        cjk = bool(_CJK_RE.match(run))
        font = _font(cjk, bold) or _font(not cjk, bold)
        if font is None:  # no font files at all: a conservative average advance
            total += len(run) * (1.0 if cjk else 0.6) * _MEASURE_PX
        else:
            total += font.getlength(run)
    return total / _MEASURE_PX * FIT_SAFETY


def text_width_pt(text: str, size_pt: float, bold: bool = False) -> float:
    return _unit_width(text, bold) * size_pt


def wrap_text(text: str, size_pt: float, width_pt: float, bold: bool = False) -> list[str]:
    """Greedy line wrap as a text frame with word wrap does it (token widths are cached, so this is linear)."""
    limit = width_pt / size_pt  # compare in 1 pt units
    lines: list[str] = []
    for hard_line in text.split("\n"):
        line, line_w = "", 0.0  # line_w includes trailing spaces of the tokens already placed
        for token in _TOKEN_RE.findall(hard_line):
            word = token.rstrip()
            word_w = _unit_width(word, bold) if word else 0.0
            if line and line_w + word_w > limit and word:
                lines.append(line.rstrip())
                line, line_w = "", 0.0
                if not token.strip():
                    continue
            if not line and word_w > limit:
                # A single word wider than the box is broken by characters, as PowerPoint does.
                for char in word:
                    char_w = _unit_width(char, bold)
                    if line and line_w + char_w > limit:
                        lines.append(line)
                        line, line_w = "", 0.0
                    line += char
                    line_w += char_w
                line += token[len(word) :]
                line_w += _unit_width(token[len(word) :], bold) if token[len(word) :] else 0.0
                continue
            line += token
            line_w += _unit_width(token, bold) if token != word else word_w
        lines.append(line.rstrip())
    return lines


@dataclass(frozen=True)
class ParagraphSpec:
    text: str
    size: float
    bold: bool = False
    indent_pt: float = 0.0  # bullet hanging indent (marL)
    space_before: float = 0.0


@dataclass
class FrameFit:
    """Measured height a frame's text needs against the height its box offers (points)."""

    slide: int
    shape: str
    needed_pt: float
    available_pt: float
    lines: int
    text: str = ""

    @property
    def fits(self) -> bool:
        return self.needed_pt <= self.available_pt + 0.5


def measure_paragraphs(paragraphs: Iterable[ParagraphSpec], width_pt: float) -> tuple[float, int]:
    height, count = 0.0, 0
    for index, para in enumerate(paragraphs):
        lines = wrap_text(para.text, para.size, width_pt - para.indent_pt, para.bold) if para.text else [""]
        count += len(lines)
        height += len(lines) * para.size * LINE_SPACING + (para.space_before if index else 0.0)
    return height, count


def _frame_specs(frame: TextFrame) -> list[ParagraphSpec]:
    specs = []
    for para in frame.paragraphs:
        runs = para.runs
        size = next((r.font.size.pt for r in runs if r.font.size), 18.0)
        bold = any(bool(r.font.bold) for r in runs)
        ppr = para._p.pPr  # python-pptx has no API for the bullet indent
        mar_l = int(ppr.get("marL", "0")) if ppr is not None else 0
        before = para.space_before.pt if para.space_before is not None else 0.0
        specs.append(ParagraphSpec("".join(r.text for r in runs), size, bold, Emu(mar_l).pt, before))
    return specs


def measure_frame(frame: TextFrame, width: int, height: int) -> tuple[float, float, int]:
    """(needed, available, lines) in points for a text frame inside a box of `width` x `height` EMU."""
    inner_w = Emu(width - frame.margin_left - frame.margin_right).pt
    inner_h = Emu(height - frame.margin_top - frame.margin_bottom).pt
    needed, lines = measure_paragraphs(_frame_specs(frame), inner_w)
    return needed, inner_h, lines


def check_presentation(path: Path) -> list[FrameFit]:
    """Measure every text frame and table cell of a saved deck; returns all measurements."""
    fits: list[FrameFit] = []
    deck = Presentation(str(path))
    for number, slide in enumerate(deck.slides, start=1):
        for shape in slide.shapes:
            if shape.has_text_frame and shape.text_frame.text.strip():
                needed, available, lines = measure_frame(shape.text_frame, shape.width, shape.height)
                fits.append(FrameFit(number, shape.name, needed, available, lines, shape.text_frame.text[:80]))
            if shape.has_table:
                table: Table = shape.table
                for r, row in enumerate(table.rows):
                    for c, cell in enumerate(row.cells):
                        width = table.columns[c].width
                        needed, available, lines = measure_frame(cell.text_frame, width, row.height)
                        fits.append(FrameFit(number, f"{shape.name}[{r},{c}]", needed, available, lines, cell.text))
    return fits


# ---------------------------------------------------------------- drawing helpers


def _set_fonts(run: object, size: float, bold: bool, color: RGBColor) -> None:
    font = run.font  # type: ignore[attr-defined]
    font.size = Pt(size)
    font.bold = bold
    font.name = LATIN_FONT
    font.color.rgb = color
    rpr = run._r.get_or_add_rPr()  # type: ignore[attr-defined]
    # East Asian typeface: python-pptx only sets <a:latin>; without <a:ea> Chinese falls back arbitrarily.
    for old in rpr.findall(qn("a:ea")):
        rpr.remove(old)
    ea = etree.SubElement(rpr, qn("a:ea"))
    ea.set("typeface", CJK_FONT)
    latin = rpr.find(qn("a:latin"))
    if latin is not None:
        latin.addnext(ea)


def _bullet(paragraph: object, indent_pt: float) -> None:
    ppr = paragraph._p.get_or_add_pPr()  # type: ignore[attr-defined]
    ppr.set("marL", str(int(Pt(indent_pt))))
    ppr.set("indent", str(-int(Pt(indent_pt))))
    for tag in ("a:buNone", "a:buChar", "a:buAutoNum"):
        for old in ppr.findall(qn(tag)):
            ppr.remove(old)
    bu_font = etree.SubElement(ppr, qn("a:buFont"))
    bu_font.set("typeface", LATIN_FONT)
    bu_char = etree.SubElement(ppr, qn("a:buChar"))
    bu_char.set("char", "•")


def _fill_frame(frame: TextFrame, specs: list[ParagraphSpec], color: RGBColor, *, bullets: bool = False,
                align: PP_ALIGN = PP_ALIGN.LEFT, anchor: MSO_ANCHOR = MSO_ANCHOR.TOP) -> None:  # fmt: skip
    frame.clear()
    frame.word_wrap = True
    frame.auto_size = MSO_AUTO_SIZE.NONE
    frame.vertical_anchor = anchor
    frame.margin_left = frame.margin_right = MARGIN_X
    frame.margin_top = frame.margin_bottom = MARGIN_Y
    for index, spec in enumerate(specs):
        para = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
        para.alignment = align
        para.line_spacing = Pt(spec.size * LINE_SPACING)
        para.space_before = Pt(spec.space_before) if index else Pt(0)
        para.space_after = Pt(0)
        run = para.add_run()
        run.text = spec.text
        _set_fonts(run, spec.size, spec.bold, color)
        if bullets:
            _bullet(para, spec.indent_pt)


def fit_paragraphs(
    texts: list[str],
    width: int,
    height: int,
    *,
    max_size: float,
    min_size: float,
    bold: bool = False,
    bullet_indent: float = 0.0,
    gap: float = 0.0,
) -> list[ParagraphSpec]:
    """Largest font size at which `texts` fit the box; below `min_size`, shorten the longest text."""
    inner_w = Emu(width - 2 * MARGIN_X).pt
    inner_h = Emu(height - 2 * MARGIN_Y).pt
    texts = [t for t in texts if t.strip()] or [""]
    while True:
        size = max_size
        while size >= min_size:
            indent = bullet_indent * size / 20 if bullet_indent else 0.0
            specs = [ParagraphSpec(t, size, bold, indent, gap * size / 20) for t in texts]
            if measure_paragraphs(specs, inner_w)[0] <= inner_h:
                return specs
            size -= 1
        # Even the smallest size overflows: cut the longest text and try again.
        longest = max(range(len(texts)), key=lambda i: len(texts[i]))
        current = texts[longest]
        if len(current) <= 8:
            if len(texts) == 1:
                return [ParagraphSpec("…", min_size, bold, 0.0)]
            texts = texts[:-1]
            continue
        texts[longest] = shorten(current.rstrip("…"), max(8, int(len(current) * 0.85)))


class DeckBuilder:
    """Draws the slides; positions in EMU on a 13.333 x 7.5 in canvas."""

    left = Inches(0.7)
    content_top = Inches(1.75)
    content_w = Inches(11.93)
    content_h = Inches(4.95)

    def __init__(self, title: str, locale: str, figures_dir: Path | None) -> None:
        self.prs: PresentationType = Presentation()
        self.prs.slide_width = SLIDE_W
        self.prs.slide_height = SLIDE_H
        self.title = title
        self.zh = is_chinese(locale)
        self.figures_dir = figures_dir.resolve() if figures_dir else None
        self.total = 0

    # Each slide kind is a function so the total slide count can be known before numbering.
    def _base(self, title: str, number: int) -> PptxSlide:
        slide = self.prs.slides.add_slide(self.prs.slide_layouts[5])  # "Title Only"
        shape = slide.shapes.title
        shape.left, shape.top, shape.width, shape.height = Inches(0.6), Inches(0.35), Inches(12.13), Inches(1.15)
        specs = fit_paragraphs([title], shape.width, shape.height, max_size=32, min_size=20, bold=True)
        _fill_frame(shape.text_frame, specs, NAVY, anchor=MSO_ANCHOR.BOTTOM)
        bar = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, Inches(0.7), Inches(1.55), Inches(1.2), Inches(0.06))
        bar.fill.solid()
        bar.fill.fore_color.rgb = ACCENT
        bar.line.fill.background()
        self._footer(slide, number)
        return slide

    def _footer(self, slide: PptxSlide, number: int) -> None:
        box = slide.shapes.add_textbox(Inches(11.4), Inches(6.95), Inches(1.5), Inches(0.4))
        box.name = "Slide Number"
        specs = fit_paragraphs([f"{number} / {self.total}"], box.width, box.height, max_size=12, min_size=9)
        _fill_frame(box.text_frame, specs, MUTED, align=PP_ALIGN.RIGHT)
        deck = slide.shapes.add_textbox(Inches(0.6), Inches(6.95), Inches(9.5), Inches(0.4))
        deck.name = "Footer"
        specs = fit_paragraphs([shorten(self.title, 110)], deck.width, deck.height, max_size=11, min_size=9)
        _fill_frame(deck.text_frame, specs, MUTED)

    @staticmethod
    def _notes(slide: PptxSlide, notes: str) -> None:
        if notes.strip():
            frame = slide.notes_slide.notes_text_frame
            if frame is not None:
                frame.text = notes.strip()

    def title_slide(self, subtitle: str, notes: str) -> None:
        slide = self.prs.slides.add_slide(self.prs.slide_layouts[0])
        band = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, 0, 0, Inches(0.35), SLIDE_H)
        band.fill.solid()
        band.fill.fore_color.rgb = ACCENT
        band.line.fill.background()
        title = slide.shapes.title
        title.left, title.top, title.width, title.height = Inches(1.1), Inches(1.9), Inches(11.2), Inches(2.4)
        specs = fit_paragraphs([self.title], title.width, title.height, max_size=44, min_size=24, bold=True)
        _fill_frame(title.text_frame, specs, NAVY, anchor=MSO_ANCHOR.BOTTOM)
        sub = slide.placeholders[1]
        sub.left, sub.top, sub.width, sub.height = Inches(1.1), Inches(4.5), Inches(11.2), Inches(1.3)
        today = dt.date.today()
        date = f"{today.year}年{today.month}月{today.day}日" if self.zh else today.strftime("%d %B %Y")
        specs = fit_paragraphs([subtitle, date], sub.width, sub.height, max_size=22, min_size=12)
        specs[-1] = ParagraphSpec(specs[-1].text, max(12.0, specs[-1].size * 0.75), False, 0.0, 6.0)
        _fill_frame(sub.text_frame, specs, MUTED)
        self._notes(slide, notes)

    def bullet_slide(self, number: int, title: str, bullets: list[str], notes: str) -> None:
        slide = self._base(title, number)
        box = slide.shapes.add_textbox(self.left, self.content_top, self.content_w, self.content_h)
        box.name = "Body"
        specs = fit_paragraphs(
            bullets[:MAX_AGENDA], box.width, box.height, max_size=24, min_size=14, bullet_indent=22, gap=12
        )
        _fill_frame(box.text_frame, specs, BODY, bullets=True)
        self._notes(slide, notes)

    def table_slide(self, number: int, title: str, rows: list[list[str]], notes: str) -> None:
        slide = self._base(title, number)
        n_cols = max(len(r) for r in rows)
        rows = [r + [""] * (n_cols - len(r)) for r in rows]
        col_w = int(self.content_w / n_cols)
        size = 18.0
        while True:
            # Row heights follow the measured text, so PowerPoint never has to grow a row past the box.
            heights = []
            for r, row in enumerate(rows):
                cell_h = max(
                    measure_paragraphs([ParagraphSpec(t, size, r == 0)], Emu(col_w - 2 * MARGIN_X).pt)[0] for t in row
                )
                heights.append(int(Pt(cell_h)) + 2 * MARGIN_Y + Emu(Pt(2)))
            if sum(heights) <= self.content_h or size <= 10:
                break
            size -= 1
        if sum(heights) > self.content_h:  # still too tall at 10 pt: shorten cells and measure again
            rows = [[shorten(c, 40) for c in row] for row in rows]
            heights = [
                int(Pt(max(measure_paragraphs([ParagraphSpec(t, size, i == 0)], Emu(col_w - 2 * MARGIN_X).pt)[0]
                           for t in row))) + 2 * MARGIN_Y + Emu(Pt(2))
                for i, row in enumerate(rows)
            ]  # fmt: skip
        shape = slide.shapes.add_table(
            len(rows), n_cols, Emu(self.left), Emu(self.content_top), Emu(col_w * n_cols), Emu(sum(heights))
        )
        shape.name = "Table"
        table = shape.table
        for c in range(n_cols):
            table.columns[c].width = col_w
        for r, row in enumerate(rows):
            table.rows[r].height = heights[r]
            for c, text in enumerate(row):
                cell = table.cell(r, c)
                cell.margin_left = cell.margin_right = MARGIN_X
                cell.margin_top = cell.margin_bottom = MARGIN_Y
                _fill_frame(cell.text_frame, [ParagraphSpec(text, size, r == 0)], NAVY if r == 0 else BODY)
                cell.fill.solid()
                cell.fill.fore_color.rgb = TABLE_HEAD if r == 0 else WHITE
        self._notes(slide, notes)

    def figure_path(self, name: str | None) -> Path | None:
        """A figure file inside figures_dir, or None (never a path outside it)."""
        safe = safe_figure_name(name or "")
        if not safe or self.figures_dir is None:
            return None
        path = (self.figures_dir / safe).resolve()
        return path if path.is_relative_to(self.figures_dir) and path.is_file() else None

    def figure_slide(self, number: int, title: str, path: Path, notes: str) -> None:
        slide = self._base(title, number)
        with Image.open(path) as image:
            px_w, px_h = image.size
        scale = min(self.content_w / px_w, self.content_h / px_h)
        width, height = int(px_w * scale), int(px_h * scale)
        left = int((SLIDE_W - width) / 2)
        slide.shapes.add_picture(str(path), Emu(left), Emu(self.content_top), Emu(width), Emu(height))
        self._notes(slide, notes)


def _section_name(title: str) -> str:
    return textre.sub(r"\s*(\(cont\.\)|（续）)$", "", title).strip()


MAX_AGENDA = 8


def _balanced(items: list[str], per_slide: int) -> list[list[str]]:
    """Split a list over slides evenly (7 → 4 + 3, never 5 + 2)."""
    if not items:
        return []
    count = math.ceil(len(items) / per_slide)
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def render_pptx(
    markdown: str,
    out_path: Path,
    *,
    outline: SlideOutline | None = None,
    figures_dir: Path | None = None,
    locale: str = "en-US",
    document: ReportDocument | None = None,
) -> Path:
    """Write the deck to `out_path`: title, agenda, content slides, references; notes and numbers on all."""
    zh = is_chinese(locale)
    doc = document or parse_report(markdown, locale=locale)
    outline = outline or slide_outline(doc)
    builder = DeckBuilder(outline.title, locale, figures_dir)

    # Plan every slide first (kind, args) so "n / N" is known while drawing.
    plan: list[tuple[str, tuple[object, ...]]] = []
    agenda: list[str] = []
    for slide in outline.slides:
        for name in (_section_name(part) for part in slide.title.split(" · ")):  # a packed slide continues one
            if name and name not in agenda and not slide.figure:
                agenda.append(name)
    content = [step for slide in outline.slides for step in _plan_slide(slide, builder, zh)]
    if len(agenda) >= 3 and len(content) >= 3:  # a short deck needs no agenda
        intro = "今天我们将讨论：" if zh else "Here is what we will cover: "
        notes = intro + "；".join(agenda) + "。" if zh else intro + "; ".join(agenda) + "."
        plan.append(("bullets", ("议程" if zh else "Agenda", agenda[:MAX_AGENDA], notes)))
    plan.extend(content)
    has_refs = any(is_references_heading(_section_name(s.title)) for s in outline.slides)
    refs = [] if has_refs else reference_items(doc)
    ref_label = "参考文献" if zh else "References"
    chunks = _balanced(refs, MAX_BULLETS)
    for index, chunk in enumerate(chunks):
        label = ref_label if index == 0 else ref_label + ("（续）" if zh else " (cont.)")
        notes = "以上是本报告引用的来源。" if zh else "These are the sources cited in the report."
        plan.append(("refs", (label, chunk, notes)))

    builder.total = len(plan) + 1
    title_notes = (
        f"本次演示介绍报告《{outline.title}》的主要发现，来源列在最后。"
        if zh
        else f"This deck presents the main findings of the report “{outline.title}”; sources are listed at the end."
    )
    builder.title_slide(outline.subtitle or ("研究报告" if zh else "Research report"), title_notes)
    for number, (kind, args) in enumerate(plan, start=2):
        if kind in {"bullets", "refs"}:
            builder.bullet_slide(number, *args)  # type: ignore[arg-type]
        elif kind == "table":
            builder.table_slide(number, *args)  # type: ignore[arg-type]
        elif kind == "figure":
            builder.figure_slide(number, *args)  # type: ignore[arg-type]
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    builder.prs.save(str(out_path))
    return out_path


def _plan_slide(slide: Slide, builder: DeckBuilder, zh: bool) -> list[tuple[str, tuple[object, ...]]]:
    notes = slide.notes or "\n".join(slide.bullets) or slide.title
    planned: list[tuple[str, tuple[object, ...]]] = []
    if slide.bullets:
        planned.append(("bullets", (slide.title, slide.bullets[:MAX_BULLETS], notes)))
    if slide.table and len(slide.table) >= 1 and any(slide.table):
        planned.append(("table", (slide.title, slide.table, notes)))
    path = builder.figure_path(slide.figure)
    if path is not None:
        planned.append(("figure", (slide.title, path, notes)))
    # A figure that cannot be found is left out: a slide saying "figure unavailable" is filler.
    return planned
