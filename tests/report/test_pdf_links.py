"""Issue 31: after the check, the PDF has no link annotation outside the job's sources (read with pypdf)."""

from __future__ import annotations

from research.agents.types import SourceRef
from research.render.pdf import render_pdf
from research.report.check import report_check
from tests.report.links_support import GOOD, pdf_uris, url_key
from tests.report.test_links import SPELLINGS

SOURCES = [SourceRef(number=1, url=GOOD, title="Good", text="Heat pumps move heat with electricity.", kind="web")]


def test_an_adversarial_report_gives_a_pdf_that_links_only_to_its_sources(tmp_path):
    spellings = "\n\n".join(md for md, _ in SPELLINGS.values())
    md = f"# Report\n\nHeat pumps move heat with electricity [1].\n\n{spellings}\n\n## Works Cited\n\n" \
         "- [1] [Fake](https://evil.example/fake)\n"
    checked = report_check(md, SOURCES, remove_sure=False).markdown
    uris = pdf_uris(render_pdf(checked, tmp_path / "r.pdf", title="Report"))
    assert uris and all(url_key(u) == url_key(GOOD) for u in uris), uris
