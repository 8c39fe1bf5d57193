"""Only research/render/html.py may mark strings safe; templates never use |safe."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {ROOT / "research" / "render" / "html.py"}
PATTERN = re.compile(r"mark_safe|\|\s*safe(seq)?\b|SafeString\(|{%\s*autoescape\s+off")


def test_nothing_else_marks_html_safe():
    offenders = []
    for base in (ROOT / "research", ROOT / "templates"):
        for path in base.rglob("*"):
            if path.suffix not in {".py", ".html"} or path in ALLOWED or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if PATTERN.search(line):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_pattern_catches_the_usual_forms():
    for line in ("{{ body|safe }}", "{{ body | safe }}", "x = mark_safe(y)", "{{ items|safeseq }}",
                 "{% autoescape off %}"):  # fmt: skip
        assert PATTERN.search(line), line
    for line in ("{{ body|safe_title }}", "{{ is_safe }}", "# keep this safe"):
        assert not PATTERN.search(line), line
