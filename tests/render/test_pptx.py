"""render_pptx: decks read back with python-pptx; every text frame measured to fit its box."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pptx import Presentation
from pptx.util import Emu

from research.agents.types import Slide, SlideOutline
from research.render.derive import expected_slide_count
from research.render.pptx import check_presentation, render_pptx, text_width_pt, wrap_text
from research.render.preview import slides_to_png
from research.report.citations import cited_numbers
from research.report.document import parse_report
from tests.render.reports import all_reports


def titles(deck) -> list[str]:
    return [s.shapes.title.text for s in deck.slides]


def bodies(slide) -> list:
    return [shape for shape in slide.shapes if shape.name == "Body"]


@pytest.fixture(scope="module")
def en_deck(tmp_path_factory, en_report: str, figures_dir: Path) -> Path:
    return render_pptx(en_report, tmp_path_factory.mktemp("pptx") / "en.pptx", figures_dir=figures_dir)


def test_english_deck_structure(en_deck: Path):
    deck = Presentation(str(en_deck))
    assert (Emu(deck.slide_width).inches, Emu(deck.slide_height).inches) == pytest.approx((13.333, 7.5), abs=0.01)
    names = titles(deck)
    assert names[0] == "The State of Solar Power in 2024"
    assert names[1] == "Agenda"
    assert names[-1] == "References"
    for expected in ("Overview", "Cost trends", "Deployment", "Grid integration", "Installed capacity by region"):
        assert expected in names
    agenda = bodies(deck.slides[1])[0].text_frame.text
    assert "Cost trends" in agenda and "Deployment" in agenda
    refs = bodies(deck.slides[-1])[0].text_frame.text
    assert "[1] IEA Renewables 2023" in refs and "https://www.lazard.com/lcoe" in refs


def test_every_slide_has_notes_number_and_at_most_five_bullets(en_deck: Path):
    deck = Presentation(str(en_deck))
    total = len(deck.slides)
    for number, slide in enumerate(deck.slides, start=1):
        assert slide.has_notes_slide and slide.notes_slide.notes_text_frame.text.strip(), number
        for body in bodies(slide):
            assert 1 <= len(body.text_frame.paragraphs) <= 5
        if number > 1:
            footer = [s.text_frame.text for s in slide.shapes if s.name == "Slide Number"]
            assert footer == [f"{number} / {total}"]
    # The talk track: the section's full sentences with their markers, then the sources they cite.
    cost = next(s for s in deck.slides if s.shapes.title.text == "Cost trends")
    notes = cost.notes_slide.notes_text_frame.text
    assert "Utility-scale solar is now the cheapest source of new electricity in most markets. [3]" in notes
    assert "Sources: [1] IEA Renewables 2023 (https://www.iea.org/reports/renewables-2023)" in notes
    assert "[3] Lazard LCOE (https://www.lazard.com/lcoe)" in notes and "[5]" not in notes


def test_native_table_and_figure(en_deck: Path):
    deck = Presentation(str(en_deck))
    tables = [shape.table for slide in deck.slides for shape in slide.shapes if shape.has_table]
    assert len(tables) == 1
    assert [c.text for c in tables[0].rows[0].cells] == ["Year", "Price ($/W)", "Capacity (GW)"]
    assert tables[0].cell(3, 2).text == "1400"
    pictures = [
        (slide, shape)
        for slide in deck.slides
        for shape in slide.shapes
        if shape.shape_type == 13  # PICTURE
    ]
    assert len(pictures) == 1
    slide, picture = pictures[0]
    assert slide.shapes.title.text == "Installed capacity by region"
    assert picture.left >= 0 and picture.left + picture.width <= deck.slide_width
    assert picture.top + picture.height <= deck.slide_height
    assert picture.width / picture.height == pytest.approx(600 / 360, rel=0.01)


def test_no_text_overflows(en_deck: Path):
    fits = check_presentation(en_deck)
    assert len(fits) > 20
    assert [f for f in fits if not f.fits] == []


def test_long_and_chinese_text_is_shrunk_or_cut_to_fit(tmp_path: Path):
    long_en = "Renewable capacity additions accelerated " * 12
    long_zh = "中国新能源汽车渗透率持续提高，充电基础设施建设不断加快，" * 8
    outline = SlideOutline(
        title="A very long deck title that goes on and on about the many facets of energy transition " * 3,
        slides=[
            Slide(title="Long English bullets " * 8, bullets=[long_en] * 5, notes="n"),
            Slide(title="很长的中文要点", bullets=[long_zh] * 5, notes="讲稿"),
            Slide(
                title="Wide table",
                table=[[f"header {c} long text" for c in range(6)]] + [[long_en[:120]] * 6 for _ in range(7)],
                notes="t",
            ),  # fmt: skip
            Slide(title="Missing figure", figure="nope.png", notes="f"),  # left out: no filler slide
        ],
    )
    out = render_pptx("# ignored", tmp_path / "long.pptx", outline=outline, locale="zh-CN")
    fits = check_presentation(out)
    assert [f for f in fits if not f.fits] == []
    deck = Presentation(str(out))
    bullets = [p.runs[0].font.size.pt for s in deck.slides for b in bodies(s) for p in b.text_frame.paragraphs]
    assert min(bullets) >= 14  # shrunk, but never below a readable size
    assert any(t.endswith("…") for s in deck.slides for b in bodies(s) for t in [b.text_frame.text])
    assert "Missing figure" not in titles(deck)


def test_measurement_uses_real_fonts():
    # CJK glyphs are one em wide; Latin text is much narrower than one em per character.
    assert text_width_pt("中文字体", 10) == pytest.approx(40 * 1.04, rel=0.02)
    assert text_width_pt("iiii", 10) < text_width_pt("WWWW", 10) / 2
    lines = wrap_text("alpha beta gamma delta epsilon", 20, 120)
    assert len(lines) > 1 and all(text_width_pt(line, 20) <= 120 for line in lines)


FILLER = re.compile(r"already appear|already listed|offline engine|without a language model|已在上文|离线引擎|"
                    r"figure unavailable|图略", re.I)  # fmt: skip
CONT = re.compile(r"\(cont\.\)$|（续）$")


@pytest.fixture(scope="module")
def decks(tmp_path_factory) -> dict[str, Path]:
    """Every test report as a deck (offline-engine reports included), rendered as in production."""
    root = tmp_path_factory.mktemp("decks")
    out = {}
    for name, md in all_reports().items():
        locale = parse_report(md).locale
        out[name] = render_pptx(md, root / f"{name}.pptx", locale=locale)
    return out


@pytest.mark.parametrize("name", sorted(all_reports()))
def test_decks_are_worth_presenting(decks: dict[str, Path], name: str):
    md = all_reports()[name]
    doc = parse_report(md)
    deck = Presentation(str(decks[name]))
    names = titles(deck)
    furniture = re.compile(r"(Agenda|议程|References|参考文献)")
    content = [s for s in list(deck.slides)[1:] if not furniture.match(s.shapes.title.text)]
    low, high = expected_slide_count(doc)
    text_slides = [s for s in content if bodies(s)]
    assert low <= len(text_slides) <= high, (len(text_slides), low, high, names)
    for slide in deck.slides:
        text = " ".join(shape.text_frame.text for shape in slide.shapes if shape.has_text_frame)
        assert not FILLER.search(text), slide.shapes.title.text
        if CONT.search(slide.shapes.title.text):
            assert len(bodies(slide)[0].text_frame.paragraphs) >= 3, slide.shapes.title.text
    assert sum(1 for n in names if re.match(r"(Agenda|议程)", n)) <= 1
    assert [f for f in check_presentation(decks[name]) if not f.fits] == []
    # The deck read back: each bullet cites exactly what its report sentence cites.
    sentences = doc.sentences()
    for slide in content:
        for body in bodies(slide):
            for para in body.text_frame.paragraphs:
                stem = re.sub(r"(?:\s*\[\d+\])+$", "", para.text).rstrip("…").strip()
                sources = [s for s in sentences if s.text.startswith(stem)]
                assert sources, para.text
                assert tuple(cited_numbers(para.text)) in {s.citations for s in sources}, para.text
        notes = slide.notes_slide.notes_text_frame.text
        if bodies(slide) and re.search(r"\[\d+\]", bodies(slide)[0].text_frame.text):
            assert "Sources: [" in notes or "来源：[" in notes, notes


def test_every_slide_renders_to_png_for_the_preview(decks: dict[str, Path], tmp_path: Path):
    from PIL import Image, ImageStat

    for name in ("fixture-en", "offline-zh-CN"):
        pngs = slides_to_png(decks[name], tmp_path / name, width_px=640)
        assert len(pngs) == len(Presentation(str(decks[name])).slides)
        assert [p.name for p in pngs][:2] == ["slide-01.png", "slide-02.png"]
        for png in pngs:
            with Image.open(png) as image:
                assert image.size[0] == 640 and abs(image.size[1] - 360) <= 1  # 16:9
                # Not blank: a slide has dark text on a light background.
                assert ImageStat.Stat(image.convert("L")).stddev[0] > 10, png.name
