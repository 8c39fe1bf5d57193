"""Helpers for the link-policy tests: what a rendered page, a PDF and a Markdown file link to."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from research.report.links import LinkPolicy, url_key

__all__ = ["GOOD", "POLICY", "allowed_href", "html_targets", "markdown_links", "pdf_uris", "url_key"]
from research.report.markdown import parse

GOOD = "https://good.example/a"
POLICY = LinkPolicy.of([GOOD])


class _Targets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "href" and value is not None:
                self.hrefs.append(value)
            elif name == "src" and value is not None:
                self.srcs.append(value)
            elif name == "id" and value is not None:
                self.ids.append(value)


def html_targets(html: str) -> _Targets:
    parser = _Targets()
    parser.feed(html)
    return parser


def allowed_href(href: str) -> bool:
    return href.startswith("#") or url_key(href) == url_key(GOOD)


def markdown_links(md: str) -> list[str]:
    """Every destination markdown-it reads as a link, image, autolink or definition in `md`."""
    tokens, env = parse(md)
    found = [str(d["href"]) for d in env.get("references", {}).values()]
    stack = list(tokens)
    while stack:
        token = stack.pop()
        stack.extend(token.children or [])
        if token.type == "link_open":
            found.append(str(token.attrGet("href")))
        elif token.type == "image":
            found.append(str(token.attrGet("src")))
    return found


def pdf_uris(path: Path) -> list[str]:
    """The URI of every link annotation in the PDF (internal jumps are destinations, not URIs)."""
    from pypdf import PdfReader

    uris: list[str] = []
    for page in PdfReader(str(path)).pages:
        for annot in page.get("/Annots") or []:
            action = annot.get_object().get("/A")
            if action is not None and action.get_object().get("/URI") is not None:
                uris.append(str(action.get_object()["/URI"]))
    return uris
