"""render_pdf: real PDFs read back with poppler (pdftotext, pdffonts, pdfimages)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from research.render.pdf import FetchRefused, FiguresOnlyFetcher, build_pdf_html, render_pdf


def run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.fixture(scope="module")
def en_pdf(tmp_path_factory, en_report: str, figures_dir: Path) -> Path:
    return render_pdf(en_report, tmp_path_factory.mktemp("pdf") / "en.pdf", figures_dir=figures_dir)


@pytest.fixture(scope="module")
def zh_pdf(tmp_path_factory, zh_report: str, figures_dir: Path) -> Path:
    return render_pdf(zh_report, tmp_path_factory.mktemp("pdf") / "zh.pdf", figures_dir=figures_dir, locale="zh-CN")


def flat(text: str) -> str:
    """Text with every run of whitespace as one space: the checks must not depend on where lines break."""
    return " ".join(text.split())


def bare(text: str) -> str:
    """Text with no whitespace at all: for URLs and Chinese, which a line break may split anywhere."""
    return "".join(text.split())


def test_english_pdf_has_title_toc_sections_and_references(en_pdf: Path):
    text = run("pdftotext", "-layout", str(en_pdf), "-")
    pages = [flat(page) for page in text.split("\f")]
    assert "The State of Solar Power in 2024" in pages[0]
    assert "Contents" in pages[1]
    # TOC entries carry page numbers (target-counter), e.g. "Cost trends ....... 3".
    assert re.search(r"Cost trends[ .]*\d", pages[1]), pages[1]
    for heading in ("Cost trends", "Deployment", "Grid integration", "References", "IEA Renewables 2023"):
        assert heading in flat(text)
    assert "https://www.iea.org/reports/renewables-2023" in bare(text)  # printed URLs in the references
    # Running header and "Page X of Y" footer on body pages.
    info = run("pdfinfo", str(en_pdf))
    total = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert f"Page 2 of {total}" in pages[1]
    assert pages[2].startswith("The State of Solar Power in 2024")
    # Raw HTML in the report neither runs nor shows.
    assert "<script" not in text and 'alert("xss")' not in text
    # Tables and code survive.
    assert "1400" in text and "print(" in text


def test_pdf_is_set_in_the_named_fonts_only(en_pdf: Path, zh_pdf: Path):
    # pdffonts: two header lines, then one font per line; the name carries a subset prefix (ABCDEF+DejaVuSerif).
    names = {line.split()[0].split("+")[-1] for pdf in (en_pdf, zh_pdf)
             for line in run("pdffonts", str(pdf)).splitlines()[2:] if line.strip()}
    assert names and all(n.startswith(("DejaVu", "Noto")) for n in names), names
    assert "DejaVu-Serif" in names and "Noto-Sans-CJK-SC" in names, names


def test_english_pdf_embeds_the_figure(en_pdf: Path):
    listing = run("pdfimages", "-list", str(en_pdf)).splitlines()[2:]
    assert any(row.split()[3:5] == ["600", "360"] for row in listing), listing


def test_chinese_pdf_text_and_cjk_fonts(zh_pdf: Path):
    text = bare(run("pdftotext", str(zh_pdf), "-"))
    for phrase in (
        "中国新能源汽车市场研究",
        "目录",
        "市场规模",
        "购置税减免政策延续至2027年",
        "参考文献",
        "第2页，共",
    ):
        assert phrase in text, phrase
    fonts = run("pdffonts", str(zh_pdf))
    assert "Noto-Sans-CJK-SC" in fonts or "NotoSansCJK" in fonts.replace("-", "")
    assert "Noto-Serif-CJK-SC" in fonts


def test_fetcher_refuses_everything_but_figures(figures_dir: Path, tmp_path: Path):
    fetcher = FiguresOnlyFetcher(figures_dir)
    response = fetcher.fetch((figures_dir / "capacity.png").as_uri())
    assert response.read()[:8] == b"\x89PNG\r\n\x1a\n"
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"\x89PNG\r\n\x1a\nsecret")
    link = figures_dir / "link.png"
    link.symlink_to(outside)
    try:
        refused = [
            "file:///etc/passwd",
            outside.as_uri(),
            link.as_uri(),  # a symlink inside the folder that points outside it
            figures_dir.as_uri() + "/../../../etc/passwd",
            figures_dir.as_uri() + "/%2e%2e/%2e%2e/etc/passwd",
            "http://127.0.0.1/capacity.png",
            "https://example.com/capacity.png",
            "ftp://example.com/x.png",
            "data:text/html;base64,PHNjcmlwdD4=",
        ]
        for url in refused:
            with pytest.raises(FetchRefused):
                fetcher.fetch(url)
    finally:
        link.unlink()
    with pytest.raises(FetchRefused):
        FiguresOnlyFetcher(None).fetch((figures_dir / "capacity.png").as_uri())


def test_pdf_without_figures_dir_drops_images(tmp_path: Path, en_report: str):
    html = build_pdf_html(en_report, with_figures=False)
    assert "<img" not in html
    out = render_pdf("# T\n\n![x](figures/capacity.png)\n\n![y](/etc/passwd)\n", tmp_path / "t.pdf")
    assert out.stat().st_size > 0
    assert run("pdfimages", "-list", str(out)).splitlines()[2:] == []


@pytest.mark.parametrize("which", ["en", "zh"])
def test_pages_render_to_images_with_ink(which: str, en_pdf: Path, zh_pdf: Path, tmp_path: Path):
    """The visual check, automated: pdftoppm rasterises every page and no page comes out blank."""
    from PIL import Image

    pdf = en_pdf if which == "en" else zh_pdf
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(tmp_path / "p")], check=True, timeout=120)
    pages = sorted(tmp_path.glob("p-*.png"))
    assert len(pages) >= 3
    for png in pages:
        image = Image.open(png).convert("L")
        width, height = image.size
        assert 0.68 < width / height < 0.73  # A4 portrait
        dark = sum(1 for px in image.getdata() if px < 128)
        assert dark / (width * height) > 0.0003, f"{png.name} is blank"  # a short contents page is sparse
