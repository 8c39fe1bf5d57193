"""Validate an uploaded file and pull its text out.

A file is accepted only when its extension names a supported type AND its bytes
look like that type: the name alone is attacker-chosen, and sniffing alone would
let e.g. an HTML page pass as "notes.txt" and be rendered differently later.
The extracted text is cleaned of page furniture (research.tools.clean: bylines,
dates, reading times, modelines, badges, sponsor blurbs, share lines) before it
is stored and chunked.
"""

from __future__ import annotations

import io
import logging
import time
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.translation import gettext as _

from research import scripts, textre
from research.tools.clean import clean_markdown, clean_text, cleaned_or_whole, extractor_config

if TYPE_CHECKING:
    from pypdf import PdfReader as PdfReaderT

logger = logging.getLogger(__name__)


class DocumentRejected(ValueError):
    """The file is not something we index; the message is safe to show the user."""


@dataclass(frozen=True)
class Extracted:
    title: str
    text: str
    kind: str  # pdf | markdown | text | html
    content_type: str


KIND_BY_EXTENSION = {
    ".pdf": "pdf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
}
CONTENT_TYPES = {
    "pdf": "application/pdf",
    "markdown": "text/markdown",
    "text": "text/plain",
    "html": "text/html",
}
ALLOWED_EXTENSIONS = tuple(sorted(KIND_BY_EXTENSION))

_HTML_SNIFF = textre.compile(
    r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*"
    r"<(?:!doctype\s+html|html|head|body|title|meta|article|section|div|p|h[1-6]|main)\b",
    textre.IGNORECASE | textre.DOTALL,
)
# Characters that turn up when bytes that are not text get decoded anyway.
_JUNK_CATEGORIES = {"Cc", "Co", "Cn", "Cs"}


def max_upload_bytes() -> int:
    return int(settings.KB_MAX_UPLOAD_BYTES)


def check_size(size: int) -> None:
    limit = max_upload_bytes()
    if size > limit:
        raise DocumentRejected(
            _("the file is too large (%(size)s bytes; the limit is %(limit)s bytes)")
            % {"size": f"{size:,}", "limit": f"{limit:,}"}
        )


def clean_filename(filename: str) -> str:
    """The last path component, without control characters, at most 255 chars (extension kept)."""
    name = textre.split(r"[\\/]", filename or "")[-1]
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C").strip().strip(".") or "document"
    if len(name) > 255:
        suffix = PurePosixPath(name).suffix[:16]
        name = name[: 255 - len(suffix)] + suffix
    return name


def kind_for_filename(filename: str) -> str:
    suffix = PurePosixPath(filename.lower()).suffix
    kind = KIND_BY_EXTENSION.get(suffix)
    if kind is None:
        shown = suffix or _("no extension")
        raise DocumentRejected(
            _("unsupported file type (%(type)s); allowed: PDF, Markdown, plain text, HTML (%(extensions)s)")
            % {"type": shown, "extensions": ", ".join(ALLOWED_EXTENSIONS)}
        )
    return kind


def _junk_ratio(text: str) -> float:
    if not text:
        return 0.0
    junk = sum(1 for ch in text if unicodedata.category(ch) in _JUNK_CATEGORIES and ch not in "\t\n\r\f")
    return junk / len(text)


# What real Chinese text is made of: ASCII, CJK punctuation, the common ideographs, full-width forms.
_GB18030_COMMON_RUN = textre.compile(f"[\\x00-\\x7f{scripts.CJK_PUNCTUATION}{scripts.HAN_COMMON}{scripts.FULLWIDTH}]+")


def _decode_gb18030(data: bytes) -> str:
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        raise DocumentRejected(_("the file is not valid UTF-8 (or GB18030) text")) from None
    common = len(text) - len(_GB18030_COMMON_RUN.sub("", text))
    if common < 0.9 * len(text):
        raise DocumentRejected(_("the file is not valid UTF-8 (or GB18030) text"))
    return text


def decode_text(data: bytes) -> str:
    """UTF-8 (BOM allowed), else GB18030 for Chinese files saved by older Windows tools.

    GB18030 maps almost any byte string to *some* characters, so a GB18030 result
    must also look like real text; NUL bytes mean binary whatever the encoding.
    """
    if b"\x00" in data:
        raise DocumentRejected(_("the file contains binary data, not text"))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = _decode_gb18030(data)
    if _junk_ratio(text) > 0.01:
        raise DocumentRejected(_("the file contains binary data, not text"))
    return text


def normalize_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return textre.sub(r"\n{3,}", "\n\n", text).strip()


def _check_pdf_header(data: bytes) -> None:
    if not data.lstrip(b"\r\n\t \xef\xbb\xbf").startswith(b"%PDF-"):
        raise DocumentRejected(
            _("the file is named .pdf but is not a PDF (no %(marker)s header)") % {"marker": "%PDF-"}
        )


def _check_deadline(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise DocumentRejected(
            _("extracting the text took longer than %(limit)s s") % {"limit": settings.KB_INDEX_TIME_S}
        )


def _check_text_size(chars: int) -> None:
    limit = int(settings.KB_MAX_TEXT_CHARS)
    if chars > limit:
        raise DocumentRejected(
            _("the document holds more than %(limit)s characters of text") % {"limit": f"{limit:,}"}
        )


def _pdf_pages_text(reader: PdfReaderT, deadline: float) -> list[str]:
    """Every page's text, within the page, decompressed-size, text-size and time caps.

    The page contents are decompressed and measured first (cheap), so a bomb (one big content stream reused
    by many pages) is refused before the costly text extraction starts.
    """
    pages = reader.pages
    max_pages = int(settings.KB_MAX_PDF_PAGES)
    if len(pages) > max_pages:
        raise DocumentRejected(
            _("the PDF has %(n)s pages; the limit is %(limit)s") % {"n": f"{len(pages):,}", "limit": max_pages}
        )
    cap = int(settings.KB_MAX_DECOMPRESSED_BYTES)
    expanded = 0
    for page in pages:
        contents = page.get_contents()
        expanded += len(contents.get_data()) if contents is not None else 0
        if expanded > cap:
            raise DocumentRejected(
                _("the PDF's pages expand to more than %(limit)s bytes of content") % {"limit": f"{cap:,}"}
            )
        _check_deadline(deadline)
    texts: list[str] = []
    chars = 0
    for page in pages:
        _check_deadline(deadline)
        text = page.extract_text() or ""
        chars += len(text)
        _check_text_size(chars)
        texts.append(text)
    _check_deadline(deadline)
    return texts


def _extract_pdf(data: bytes, deadline: float) -> tuple[str, str]:
    _check_pdf_header(data)
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError, PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentRejected(_("the PDF is password-protected"))
        pages = _pdf_pages_text(reader, deadline)
        title = ""
        if reader.metadata is not None and reader.metadata.title:
            title = str(reader.metadata.title)
    except DocumentRejected:
        raise
    except LimitReachedError as exc:  # pypdf's own caps (e.g. one stream decompressing past its limit)
        raise DocumentRejected(_("the PDF is too large to read (%(reason)s)") % {"reason": exc}) from exc
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
        logger.info("unreadable PDF: %s", exc)
        raise DocumentRejected(_("the PDF could not be read (damaged or unsupported)")) from exc
    return title, "\n\n".join(pages)


# HTML is parsed once, by lxml (libxml2's HTML parser: linear time, no recursion in Python). The stdlib
# html.parser took a quadratic 90-130 s on 1.4 MB of "</" repeated (issue 34, case 3); trafilatura then reads
# the same tree instead of parsing the text again.
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
# trafilatura's main-content pass costs ~50 µs an element: 300,000 unclosed <b><i> in 1 MB took 20 s. Past
# this many elements (a 1 MB page of prose has ~15,000) the page's visible text is kept instead.
MAIN_CONTENT_MAX_ELEMENTS = 30_000
_BLOCK = frozenset(
    "p div br li tr h1 h2 h3 h4 h5 h6 section article header footer blockquote pre table ul ol main".split()
)


def _html_tree(html: str) -> Any:
    """The lxml tree of a page, or None when it holds no element at all."""
    import lxml.html
    from lxml import etree

    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    try:  # bytes, so an XHTML page's own encoding declaration is not an error
        return lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=parser)
    except (etree.ParserError, ValueError):
        return None


def _visible_text(tree: Any) -> str:
    """All visible text, blocks separated by blank lines (the fallback when trafilatura finds no main text)."""
    from lxml import etree

    parts: list[str] = []
    skip = 0
    for event, element in etree.iterwalk(tree, events=("start", "end")):
        tag = element.tag if isinstance(element.tag, str) else ""
        if event == "start":
            if tag in _SKIP:
                skip += 1
            elif tag in _BLOCK:
                parts.append("\n\n")
            if not skip and tag and element.text:
                parts.append(element.text)
            continue
        if tag in _SKIP:
            skip -= 1
        elif tag in _BLOCK:
            parts.append("\n\n")
        if not skip and element.tail:
            parts.append(element.tail)
    return "".join(parts)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) with trafilatura's main-content extraction, falling back to all visible text."""
    tree = _html_tree(html)
    if tree is None:
        return "", ""
    title = " ".join((tree.findtext(".//title") or "").split())
    visible = _visible_text(tree)  # before trafilatura, which may prune the tree it is given
    text = ""
    try:
        import trafilatura

        if sum(1 for _ in tree.iter()) <= MAIN_CONTENT_MAX_ELEMENTS:
            text = trafilatura.extract(
                tree, include_comments=False, include_tables=True, favor_recall=True, config=extractor_config()
            ) or ""
    except Exception as exc:  # any extractor failure falls back to plain stripping
        logger.info("trafilatura failed, falling back to tag stripping: %s", exc)
    if not text.strip():
        text = textre.sub(r"[ \t]+", " ", visible)
    return title, text


def _extract_html(data: bytes) -> tuple[str, str]:
    html = decode_text(data)
    if not _HTML_SNIFF.match(html[:4096]):
        raise DocumentRejected(_("the file is named .html but does not look like HTML"))
    return html_to_text(html)


def markdown_title(text: str) -> str:
    """The first ATX heading's text ("# Title #" -> "Title"), found line by line without a regex.

    (A backtracking `^\\s{0,3}#{1,6}\\s+(.+?)\\s*#*\\s*$` took 130 s on "# a" + 6,000 blanks + "b".)
    """
    for line in text.splitlines():
        body = line.lstrip()
        if len(line) - len(body) > 3 or not body.startswith("#"):
            continue
        rest = body.lstrip("#")
        if len(body) - len(rest) > 6 or not rest[:1].isspace():
            continue
        title = rest.strip()
        bare = title.rstrip("#")
        if bare != title and (not bare or bare[-1] in " \t"):  # a closing run of #s ("## A ##"), not "C#"
            title = bare.rstrip()
        if title:
            return title
    return ""


def _extract_markdown(data: bytes) -> tuple[str, str]:
    text = decode_text(data)
    return markdown_title(text), text


def precheck(*, filename: str, data: bytes) -> str:
    """The cheap checks an upload gets at once (type, size, empty, PDF header); returns the kind.

    The costly part (parsing, extraction) runs later in extract_document, in a worker.
    """
    kind = kind_for_filename(filename)
    check_size(len(data))
    if not data.strip():
        raise DocumentRejected(_("the file is empty"))
    if kind == "pdf":
        _check_pdf_header(data)
    return kind


def extract_document(*, filename: str, data: bytes, content_type: str = "") -> Extracted:
    """Validate and extract. Raises DocumentRejected with a user-facing reason.

    `content_type` is what the client claimed; it is not trusted (the extension
    and the bytes decide) and only recorded when nothing better is known.
    """
    filename = clean_filename(filename)
    kind = precheck(filename=filename, data=data)
    deadline = time.monotonic() + settings.KB_INDEX_TIME_S

    if kind == "pdf":
        title, text = _extract_pdf(data, deadline)
    elif kind == "html":
        title, text = _extract_html(data)
    elif kind == "markdown":
        title, text = _extract_markdown(data)
    else:
        title, text = "", decode_text(data)

    _check_deadline(deadline)
    _check_text_size(len(text))
    # Markdown is cleaned by its blocks; the rest as plain text (a README.rst saved as .txt is read as RST).
    text = normalize_text(cleaned_or_whole(text, clean_markdown if kind == "markdown" else clean_text))
    if kind == "markdown":
        title = markdown_title(text)  # after cleaning: never "vim: syntax=markdown"
    _check_deadline(deadline)
    if not textre.search(r"\w", text):
        if kind == "pdf":
            raise DocumentRejected(_("no text could be extracted from the file (a scanned PDF needs OCR first)"))
        raise DocumentRejected(_("no text could be extracted from the file"))
    title = " ".join(title.split())[:255] or PurePosixPath(filename).stem[:255] or filename
    return Extracted(title=title, text=text, kind=kind, content_type=CONTENT_TYPES[kind])
