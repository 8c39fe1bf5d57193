"""The evaluation corpus (bench/eval/pages/*.txt) served as a small website on 127.0.0.1.

Each file holds the pages of one group of neighbouring topics; nearmiss-<split>.txt holds the near-miss
pages of one split's questions (another subject in the question's words) and fresh-*.txt the pages of
the unseen split. Page names are unique across files. A page starts with a line
`=== <name>`, then `key: value` header lines (title, lang, keywords), a blank line, and paragraphs
separated by blank lines. The site serves every page as HTML at /pages/<name>.html and answers
SearXNG-style JSON searches at /search?q=...&format=json, ranking pages with BM25 over title,
keywords and text (the keywords carry Chinese terms for English pages, as a real search engine
matches across languages).
"""

from __future__ import annotations

import html
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from research.ir import BM25, tokenize

PAGES_DIR = Path(__file__).resolve().parent / "pages"


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    lang: str
    keywords: str
    paragraphs: tuple[str, ...]

    @property
    def path(self) -> str:
        return f"/pages/{self.name}.html"

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)


def _parse_page(name: str, chunk: str) -> Page:
    head, _, body = chunk.strip().partition("\n\n")
    meta = dict(line.split(":", 1) for line in head.splitlines() if ":" in line)
    paragraphs = tuple(" ".join(p.split()) for p in body.split("\n\n") if p.strip())
    return Page(
        name,
        meta.get("title", name).strip(),
        meta.get("lang", "en").strip(),
        meta.get("keywords", "").strip(),
        paragraphs,
    )


NEAR_MISS_FILES = "nearmiss-*.txt"


def load_pages(directory: Path = PAGES_DIR, *, near_misses: bool = True) -> list[Page]:
    """Every page of the corpus; `near_misses=False` leaves out the near-miss files (the corpus as it was
    before issue 32, for tests written against it)."""
    skipped = set() if near_misses else set(directory.glob(NEAR_MISS_FILES))
    pages: list[Page] = []
    for file in sorted(set(directory.glob("*.txt")) - skipped):
        for chunk in file.read_text(encoding="utf-8").split("\n=== ")[0:]:
            name, _, rest = chunk.removeprefix("=== ").partition("\n")
            if name.strip():
                pages.append(_parse_page(name.strip(), rest))
    names = [p.name for p in pages]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate page names in {directory}: {', '.join(duplicates)}")
    return pages


def search(pages: list[Page], query: str, base_url: str, limit: int = 8) -> list[dict[str, str]]:
    docs = [tokenize(f"{p.title} {p.title} {p.keywords} {p.text}") for p in pages]
    scores = BM25(docs).score(tokenize(query))
    ranked = sorted((s, i) for i, s in enumerate(scores) if s > 0)[::-1][:limit]
    return [
        {
            "title": pages[i].title,
            "url": base_url + pages[i].path,
            "content": pages[i].paragraphs[0][:200],
            "engine": "eval-corpus",
        }
        for _, i in ranked
    ]


def render(page: Page) -> bytes:
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in page.paragraphs)
    lang = "zh-CN" if page.lang == "zh" else "en"
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>{html.escape(page.title)}'
        f"</title></head><body><main><article><h1>{html.escape(page.title)}</h1>\n{body}\n"
        "</article></main><footer><p>Evaluation corpus</p></footer></body></html>"
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        site = self.server.site
        if parts.path == "/search":
            query = (parse_qs(parts.query).get("q") or [""])[0]
            results = search(site.pages, query, site.url)
            self._send(200, "application/json", json.dumps({"query": query, "results": results}).encode())
            return
        page = site.by_path.get(parts.path)
        if page is None:
            self._send(404, "text/plain", b"not found")
        else:
            self._send(200, "text/html; charset=utf-8", render(page))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: CorpusSite


class CorpusSite:
    """`with CorpusSite() as site:` serves the corpus on 127.0.0.1:<free port>."""

    def __init__(self, pages: list[Page] | None = None) -> None:
        self.pages = pages if pages is not None else load_pages()
        self.by_path = {p.path: p for p in self.pages}
        self._server: _Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "CorpusSite is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> CorpusSite:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.site = self
        threading.Thread(target=self._server.serve_forever, name="eval-corpus", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> CorpusSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
