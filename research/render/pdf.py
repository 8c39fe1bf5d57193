"""Markdown report → PDF with WeasyPrint: title page, TOC with page numbers, running header, page X of Y.

The body is the sanitized HTML from `markdown_to_html`; the only resources WeasyPrint may
load are image files inside the job's figures directory (see `FiguresOnlyFetcher`).
"""

from __future__ import annotations

import base64
import datetime as dt
import html as html_lib
import logging
import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit
from urllib.request import url2pathname

from research import textre

# WeasyPrint logs every layout step at INFO (even at import); keep warnings and errors only.
logging.getLogger("weasyprint.progress").setLevel(logging.WARNING)

from weasyprint import HTML  # noqa: E402
from weasyprint.urls import URLFetcher, URLFetcherResponse  # noqa: E402

from research.agents.text import is_chinese  # noqa: E402
from research.render.html import markdown_to_html, strip_citations  # noqa: E402
from research.report.document import ReportDocument, parse_report  # noqa: E402

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_FIGURE_BYTES = 20 * 1024 * 1024
MAX_DATA_URL_BYTES = 256 * 1024
_DATA_IMAGE_RE = textre.compile(r"^data:image/(png|jpeg|gif);base64,([A-Za-z0-9+/=\s]+)$")
# Our own h2/h3 (sanitized: no heading inside a heading), so any closing h2/h3 ends it (RE2: no \1).
_TOC_HEADING_RE = textre.compile(r'<h([23]) id="(sec-\d+)">(.*?)</h[23]>', textre.DOTALL)

# The fonts the PDF is set in, named exactly and installed by scripts/sysdeps.sh (fonts-dejavu-core,
# fonts-dejavu-extra for true italics, fonts-noto-cjk): no fallback to whatever else a machine has, so
# the layout is the same everywhere. Latin faces first, CJK after so Chinese gets Noto CJK instead of
# tofu; for Chinese reports the CJK face leads so punctuation uses CJK metrics.
_LATIN_SERIF = '"DejaVu Serif"'
_LATIN_SANS = '"DejaVu Sans"'
_CJK_SERIF = '"Noto Serif CJK SC", "Noto Sans CJK SC"'
_CJK_SANS = '"Noto Sans CJK SC"'
_MONO = '"DejaVu Sans Mono", "Noto Sans Mono CJK SC"'


class FetchRefused(ValueError):
    """WeasyPrint asked for a resource outside the figures directory (or over the network)."""


class FiguresOnlyFetcher(URLFetcher):
    """Serves only image files inside `figures_dir`; refuses network, other files and most data: URLs."""

    def __init__(self, figures_dir: Path | None) -> None:
        super().__init__(timeout=1, allowed_protocols={"file", "data"})
        self.figures_dir = figures_dir.resolve() if figures_dir else None

    def fetch(self, url: str, headers: dict[str, str] | None = None) -> URLFetcherResponse:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "data":
            match = _DATA_IMAGE_RE.match(url)
            if not match or len(match.group(2)) > MAX_DATA_URL_BYTES:
                raise FetchRefused("only small inline png/jpeg/gif data: images are allowed")
            body = base64.b64decode(match.group(2))
            return URLFetcherResponse(url, body=body, headers={"Content-Type": f"image/{match.group(1)}"})
        if scheme != "file" or parts.netloc not in ("", "localhost"):
            raise FetchRefused(f"refused non-local resource: {url[:200]}")
        if self.figures_dir is None:
            raise FetchRefused("no figures directory for this document")
        path = Path(url2pathname(unquote(parts.path))).resolve()
        if not path.is_relative_to(self.figures_dir) or path.suffix.lower() not in IMAGE_SUFFIXES:
            raise FetchRefused(f"refused file outside the figures directory: {path}")
        if not path.is_file() or path.stat().st_size > MAX_FIGURE_BYTES:
            raise FetchRefused(f"figure missing or too large: {path.name}")
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return URLFetcherResponse(path.as_uri(), body=path.read_bytes(), headers={"Content-Type": mime})

    def __call__(self, url: str) -> URLFetcherResponse:
        return self.fetch(url)


def _css_string(text: str) -> str:
    """A CSS string literal that no title can break out of: everything but [A-Za-z0-9 ] is escaped."""
    return '"' + "".join(ch if ch.isascii() and (ch.isalnum() or ch == " ") else f"\\{ord(ch):x} " for ch in text) + '"'


def _labels(locale: str) -> dict[str, str]:
    if is_chinese(locale):
        return {
            "contents": "目录",
            "subtitle": "研究报告",
            "page": '"第 " counter(page) " 页，共 " counter(pages) " 页"',
        }
    return {
        "contents": "Contents",
        "subtitle": "Research report",
        "page": '"Page " counter(page) " of " counter(pages)',
    }


def _stylesheet(title: str, locale: str) -> str:
    zh = is_chinese(locale)
    body_font = f"{_CJK_SERIF}, {_LATIN_SERIF}, serif" if zh else f"{_LATIN_SERIF}, {_CJK_SERIF}, serif"
    head_font = f"{_CJK_SANS}, {_LATIN_SANS}, sans-serif" if zh else f"{_LATIN_SANS}, {_CJK_SANS}, sans-serif"
    header = title if len(title) <= 90 else title[:87] + "…"
    return f"""
@page {{
  size: A4; margin: 24mm 20mm 22mm 20mm;
  @top-center {{ content: {_css_string(header)}; font: 8.5pt {head_font}; color: #6b7280;
                 border-bottom: 0.5pt solid #d1d5db; width: 100%; padding-bottom: 2mm; vertical-align: bottom; }}
  @bottom-center {{ content: {_labels(locale)["page"]}; font: 8.5pt {head_font}; color: #6b7280; }}
}}
@page :first {{ @top-center {{ content: none; border: none; }} @bottom-center {{ content: none; }} }}
html {{ font-family: {body_font}; font-size: 11pt; line-height: 1.5; color: #1f2937; }}
h1, h2, h3, h4, h5, h6, .toc, th, figcaption {{ font-family: {head_font}; }}
h1, h2, h3, h4 {{ color: #111827; line-height: 1.25; break-after: avoid; }}
h1 {{ font-size: 20pt; }} h2 {{ font-size: 15pt; margin-top: 1.4em; border-bottom: 1pt solid #e5e7eb;
      padding-bottom: 2pt; }}
h3 {{ font-size: 12.5pt; margin-top: 1.1em; }} h4 {{ font-size: 11pt; }}
p, li {{ orphans: 2; widows: 2; text-align: {"justify" if zh else "left"}; }}
a {{ color: #1d4ed8; text-decoration: none; }}
a.cite {{ font-size: 0.8em; vertical-align: super; line-height: 0; }}
.title-page {{ height: 220mm; display: flex; flex-direction: column; justify-content: center; }}
.title-page h1 {{ font-size: 28pt; margin: 0 0 8mm 0; border: none; color: #0f172a; }}
.title-page .subtitle {{ font-family: {head_font}; font-size: 13pt; color: #475569; margin: 0; }}
.title-page .date {{ font-family: {head_font}; font-size: 10pt; color: #64748b; margin-top: 3mm; }}
.title-page .rule {{ width: 40mm; border-top: 3pt solid #2563eb; margin: 0 0 8mm 0; }}
.toc {{ break-before: page; break-after: page; }}
.toc h2 {{ border: none; }}
.toc ol {{ list-style: none; padding: 0; margin: 0; }}
.toc li {{ margin: 0.35em 0; }}
.toc li.l3 {{ padding-left: 6mm; font-size: 0.95em; color: #374151; }}
.toc a {{ color: inherit; }}
.toc a::after {{ content: leader(".") target-counter(attr(href), page); color: #6b7280; }}
table {{ border-collapse: collapse; width: 100%; margin: 1em 0; font-size: 9.5pt; }}
thead {{ display: table-header-group; }}
tr {{ break-inside: avoid; }}
th, td {{ border: 0.5pt solid #cbd5e1; padding: 3pt 6pt; vertical-align: top; }}
th {{ background: #f1f5f9; font-weight: bold; }}
.align-right {{ text-align: right; }} .align-center {{ text-align: center; }}
pre {{ background: #f8fafc; border: 0.5pt solid #e2e8f0; padding: 6pt 8pt; font-size: 8.5pt;
       white-space: pre-wrap; overflow-wrap: anywhere; break-inside: avoid; }}
code {{ font-family: {_MONO}; font-size: 0.9em; }}
blockquote {{ margin: 1em 0; padding-left: 10pt; border-left: 2pt solid #cbd5e1; color: #4b5563; }}
figure {{ margin: 1.2em 0; text-align: center; break-inside: avoid; }}
figure img {{ max-width: 100%; max-height: 150mm; }}
figcaption {{ font-size: 9pt; color: #4b5563; margin-top: 4pt; }}
img {{ max-width: 100%; }}
ul.references {{ list-style: none; padding-left: 0; font-size: 9.5pt; }}
ul.references a::after {{ content: " — " attr(href); color: #6b7280; font-size: 0.9em; }}
ul.references li {{ margin: 0.3em 0; padding-left: 2em; text-indent: -2em; overflow-wrap: anywhere; }}
"""


def _strip_title_line(markdown: str) -> str:
    """The first `# Title` goes on the title page, so the body starts with the first section."""
    lines = markdown.splitlines()
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if textre.match(r"^#\s+\S", line):
            return "\n".join(lines[index + 1 :])
        break
    return markdown


# Each TOC entry's page number (target-counter + leader) costs WeasyPrint more the longer the TOC is: 300
# entries took 11 s, 12,000 took minutes (issue 34, case 5). The TOC lists the first TOC_MAX_ENTRIES and
# says how many more sections the report has.
TOC_MAX_ENTRIES = 60


def _toc_capped(items: list[str], locale: str) -> list[str]:
    """At most TOC_MAX_ENTRIES entries, then one line saying how many are left out."""
    if len(items) <= TOC_MAX_ENTRIES:
        return items
    left = len(items) - TOC_MAX_ENTRIES
    note = (f"另有 {left} 个小节未列出" if is_chinese(locale)
            else f"… and {left:,} more sections, not listed (the contents show the first {TOC_MAX_ENTRIES})")
    return [*items[:TOC_MAX_ENTRIES], f'<li class="l2 toc-more">{html_lib.escape(note)}</li>']


def _toc(body_html: str, locale: str) -> str:
    items = []
    for level, anchor, inner in _TOC_HEADING_RE.findall(body_html):
        text = strip_citations(html_lib.unescape(textre.sub(r"<[^>]+>", "", inner))).strip()
        if text:
            items.append(f'<li class="l{level}"><a href="#{anchor}">{html_lib.escape(text)}</a></li>')
    if not items:
        return ""
    heading = html_lib.escape(_labels(locale)["contents"])
    return f'<nav class="toc"><h2>{heading}</h2><ol>{"".join(_toc_capped(items, locale))}</ol></nav>'


def build_pdf_html(
    markdown: str,
    *,
    title: str | None = None,
    locale: str = "en-US",
    with_figures: bool = True,
    document: ReportDocument | None = None,
) -> str:
    """The full HTML document WeasyPrint renders (exposed for tests and previews)."""
    # The title comes from the same parse as the slides and podcast; the body is the sanitized HTML.
    title = title or (document or parse_report(markdown, locale=locale)).title
    # Figures are emitted as relative URLs; WeasyPrint resolves them against base_url (the figures dir).
    figure_url = (lambda name: quote(name)) if with_figures else None
    body = str(markdown_to_html(_strip_title_line(markdown), figure_url=figure_url))
    labels = _labels(locale)
    today = dt.date.today()
    date = f"{today.year}年{today.month}月{today.day}日" if is_chinese(locale) else today.strftime("%d %B %Y")
    return (
        f'<!DOCTYPE html><html lang="{html_lib.escape(locale)}"><head><meta charset="utf-8">'
        f"<title>{html_lib.escape(title)}</title><style>{_stylesheet(title, locale)}</style></head><body>"
        f'<section class="title-page"><div class="rule"></div><h1>{html_lib.escape(title)}</h1>'
        f'<p class="subtitle">{html_lib.escape(labels["subtitle"])}</p>'
        f'<p class="date">{html_lib.escape(date)}</p></section>'
        f"{_toc(body, locale)}<main>{body}</main></body></html>"
    )


def render_pdf(
    markdown: str,
    out_path: Path,
    *,
    title: str | None = None,
    figures_dir: Path | None = None,
    locale: str = "en-US",
) -> Path:
    """Write the report as a PDF to `out_path` and return it."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    document = build_pdf_html(markdown, title=title, locale=locale, with_figures=figures_dir is not None)
    base_url = figures_dir.resolve().as_uri() + "/" if figures_dir else None
    options: dict[str, Any] = {"pdf_tags": True}  # tagged PDF: better text extraction and accessibility
    HTML(string=document, base_url=base_url, url_fetcher=FiguresOnlyFetcher(figures_dir)).write_pdf(out_path, **options)
    return out_path
