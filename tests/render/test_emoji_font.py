"""Issue 33: emoji are drawn with an emoji font (fonts-noto-color-emoji, installed by scripts/sysdeps.sh),
not as boxes, in the PDF; the page names the same font."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from research.render.pdf import render_pdf

ROOT = Path(__file__).resolve().parents[2]


def test_sysdeps_installs_the_emoji_font():
    line = next(ln for ln in (ROOT / "scripts/sysdeps.sh").read_text().splitlines() if ln.startswith("PKGS="))
    assert "fonts-noto-color-emoji" in shlex.split(line.split("=", 1)[1])[0].split()


def test_pdf_draws_emoji_with_the_emoji_font(tmp_path):
    # Found by fontconfig's fallback: naming it in the PDF's stacks makes Pango draw some ASCII from it too.
    pdf = render_pdf("# Heat 🔥 pumps\n\nA house 🏠 with a heat pump 💡.\n", tmp_path / "e.pdf", title="Heat 🔥")
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert "Noto-Color-Emoji" in fonts


def test_page_font_stack_ends_with_the_emoji_font():
    css = (ROOT / "static/css/app.css").read_text()
    body = next(ln for ln in css.splitlines() if ln.startswith("body {"))
    assert '"Noto Color Emoji"' in body
