"""`manage.py render` end to end in a subprocess: no Redis, Celery or database involved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pptx import Presentation

ROOT = Path(__file__).resolve().parents[2]


def render(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    # A broker URL that points nowhere proves the command never touches Redis/Celery.
    env = {**os.environ, "TTS_BACKEND": "espeak", "REDIS_URL": "redis://127.0.0.1:9/0"}
    return subprocess.run(
        [sys.executable, "manage.py", "render", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def pdf_text(path: Path) -> str:
    # No whitespace at all: a check must not depend on where the PDF breaks its lines (Chinese breaks anywhere).
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return "".join(out.split())


@pytest.mark.parametrize(
    ("name", "title", "snippet"),
    [
        ("en", "The State of Solar Power in 2024", "Cost trends"),
        ("zh", "中国新能源汽车市场研究", "购置税减免政策延续至2027年"),
    ],
)
def test_render_all_formats(tmp_path: Path, report_dir: Path, name: str, title: str, snippet: str):
    report = report_dir / f"{name}.md"
    out = tmp_path / "out" / "nested"  # created on demand
    proc = render(str(report), "--formats", "pdf,pptx,podcast", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    written = {out / f"{name}.{ext}" for ext in ("pdf", "pptx", "mp3", "txt", "vtt")}
    assert all(path.is_file() and path.stat().st_size > 0 for path in written)
    assert {Path(line) for line in proc.stdout.splitlines() if line.startswith("/")} == written
    text = pdf_text(out / f"{name}.pdf")
    assert "".join(title.split()) in text and "".join(snippet.split()) in text
    assert Presentation(str(out / f"{name}.pptx")).slides[0].shapes.title.text == title
    assert (out / f"{name}.vtt").read_text(encoding="utf-8").startswith("WEBVTT")
    if name == "en":  # the figure next to the report was found
        listing = subprocess.run(["pdfimages", "-list", str(out / "en.pdf")], capture_output=True, text=True).stdout
        assert len(listing.splitlines()) > 2
    else:
        assert "locale zh-CN" in proc.stderr


def test_errors_are_clear_and_non_zero(tmp_path: Path, report_dir: Path):
    missing = render(str(tmp_path / "nope.md"), "--out", str(tmp_path))
    assert missing.returncode != 0 and "report not found" in missing.stderr
    unknown = render(str(report_dir / "en.md"), "--formats", "pdf,docx", "--out", str(tmp_path))
    assert unknown.returncode != 0 and "unknown format(s) docx" in unknown.stderr
    assert not (tmp_path / "en.pdf").exists()


def test_a_failed_format_does_not_stop_the_others(tmp_path: Path, report_dir: Path):
    # flite cannot speak Chinese: the podcast fails, the PDF is still written, the exit code says so.
    proc = render(str(report_dir / "zh.md"), "--formats", "podcast,pdf", "--tts", "flite", "--out", str(tmp_path))
    assert proc.returncode != 0
    assert "podcast failed" in proc.stderr and "failed format(s): podcast" in proc.stderr
    assert (tmp_path / "zh.pdf").is_file() and not (tmp_path / "zh.mp3").exists()
