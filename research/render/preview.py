"""Previews: PPTX → PDF with headless LibreOffice Impress → one PNG per slide with pdftoppm; a PDF's first pages.

Used by the tests (to look at every slide) and by the job page's slide preview. LibreOffice
runs with a private profile owned by this process (created on first use, removed at exit), so
renders in different worker processes never share a profile lock, nothing is written to the
user's home directory, and only the first conversion pays for creating the profile (about 6 s).
Conversions within one process are serialized: one profile serves one LibreOffice at a time.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

CONVERT_TIMEOUT_S = 180.0
DEFAULT_WIDTH_PX = 960


class PreviewError(RuntimeError):
    """The deck could not be rendered to images (LibreOffice or poppler missing or failing)."""


def _office() -> str:
    for name in ("soffice", "libreoffice"):
        path = shutil.which(name)
        if path:
            return path
    raise PreviewError("LibreOffice (soffice) is not installed; run scripts/sysdeps.sh")


_profile_lock = threading.Lock()
_profiles: dict[int, Path] = {}


def _profile_dir() -> Path:
    """This process's LibreOffice profile (a forked worker gets its own)."""
    pid = os.getpid()
    if pid not in _profiles:
        path = Path(tempfile.mkdtemp(prefix=f"lo-profile-{pid}-"))
        _profiles[pid] = path
        atexit.register(shutil.rmtree, path, True)
    return _profiles[pid]


def previews_available() -> bool:
    return shutil.which("pdftoppm") is not None and any(shutil.which(n) for n in ("soffice", "libreoffice"))


def pptx_to_pdf(pptx_path: Path, out_dir: Path) -> Path:
    """Convert a deck to PDF (one page per slide) in `out_dir`; returns the PDF's path."""
    pptx_path = Path(pptx_path).resolve()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with _profile_lock:
        cmd = [
            _office(), f"-env:UserInstallation={_profile_dir().as_uri()}", "--headless", "--norestore",
            "--convert-to", "pdf", "--outdir", str(out_dir), str(pptx_path),
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise PreviewError(f"LibreOffice timed out after {CONVERT_TIMEOUT_S:.0f}s") from exc
    pdf = out_dir / (pptx_path.stem + ".pdf")
    if proc.returncode != 0 or not pdf.is_file():
        raise PreviewError(f"LibreOffice could not convert {pptx_path.name}: {(proc.stderr or proc.stdout)[-300:]}")
    return pdf


def slides_to_png(pptx_path: Path, out_dir: Path, *, width_px: int = DEFAULT_WIDTH_PX) -> list[Path]:
    """Render every slide of `pptx_path` to `out_dir/slide-01.png`, … (in slide order) and return the paths."""
    if shutil.which("pdftoppm") is None:
        raise PreviewError("pdftoppm (poppler-utils) is not installed")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="slides-pdf-") as tmp:
        pdf = pptx_to_pdf(pptx_path, Path(tmp))
        for old in out_dir.glob("slide-*.png"):
            old.unlink()
        proc = subprocess.run(
            ["pdftoppm", "-png", "-scale-to-x", str(width_px), "-scale-to-y", "-1", str(pdf), str(out_dir / "slide")],
            capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        raise PreviewError(f"pdftoppm failed: {proc.stderr.strip()[-300:]}")
    pages = sorted(out_dir.glob("slide-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    if not pages:
        raise PreviewError("no slide images were produced")
    # pdftoppm pads the page number to the page count's width; give every file a stable two-digit name.
    named = []
    for number, page in enumerate(pages, start=1):
        target = out_dir / f"slide-{number:02d}.png"
        if page != target:
            page.rename(target)
        named.append(target)
    return named


def pdf_to_png(pdf_path: Path, out_dir: Path, *, pages: int, dpi: int = 40) -> list[Path]:
    """Render the first `pages` pages of a PDF to `out_dir/page-1.png`, … (pdftoppm); returns them in order."""
    if shutil.which("pdftoppm") is None:
        raise PreviewError("pdftoppm (poppler-utils) is not installed")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("page-*.png"):
        old.unlink()
    proc = subprocess.run(
        ["pdftoppm", "-png", "-r", str(dpi), "-f", "1", "-l", str(pages), str(pdf_path), str(out_dir / "page")],
        capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise PreviewError(f"pdftoppm failed: {proc.stderr.strip()[-300:]}")
    made = sorted(out_dir.glob("page-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    if not made:
        raise PreviewError("no page images were produced")
    return made
