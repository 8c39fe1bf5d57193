"""markdown_to_html: citations, references, figures, tables, and an XSS corpus that must not survive."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.utils.safestring import SafeString

from research.render.html import (
    ALLOWED_TAGS,
    markdown_sections,
    markdown_title,
    markdown_to_html,
    safe_figure_name,
    sanitize_html,
)


class Collector(HTMLParser):
    """Every tag and attribute in a fragment, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(fragment: str) -> Collector:
    collector = Collector()
    collector.feed(str(fragment))
    collector.close()
    return collector


def figure_url(name: str) -> str:
    return f"/jobs/1/figures/{name}"


def test_returns_safestring_with_citation_links_and_reference_ids(en_report):
    html = markdown_to_html(en_report, figure_url=figure_url)
    assert isinstance(html, SafeString)
    assert '<a class="cite" href="#ref-2"' in html and '<a class="cite" href="#ref-3"' in html
    for n in range(1, 6):
        assert f'<li id="ref-{n}">' in html
    # Citations inside code stay literal text.
    assert 'print("[1] is not a citation here")' in html.replace("&quot;", '"')
    assert not re.search(r'href="#ref-1"[^>]*>\[1\]</a> is not', html)


def test_citation_variants():
    html = str(markdown_to_html("Growth [2][5], costs [4, 6] and Chinese 增长[7，8]。 Inline `[9]`."))
    for n in (2, 5, 4, 6, 7, 8):
        assert re.search(rf'<a class="cite" href="#ref-{n}"[^>]*>\[{n}\]</a>', html), n
    assert "<code>[9]</code>" in html


def test_chinese_references_heading_gets_ids(zh_report):
    html = str(markdown_to_html(zh_report))
    assert '<li id="ref-4">' in html
    assert "中国汽车工业协会" in html


def test_figures_mapped_or_dropped():
    md = "![Chart](figures/capacity.png)\n\n![Up](figures/../../etc/passwd.png)\n\n![Remote](https://evil.test/a.png)\n"
    html = str(markdown_to_html(md, figure_url=figure_url))
    assert '<img src="/jobs/1/figures/capacity.png" alt="Chart">' in html
    assert "<figcaption>Chart</figcaption>" in html
    assert "passwd" not in html and "evil.test" not in html
    assert "<img" not in str(markdown_to_html(md))  # no figure_url: no images at all
    assert safe_figure_name("figures/a b.png") == "a b.png"
    for bad in ("../x.png", "/etc/x.png", "figures/sub/x.png", "x.svg", "javascript:x.png", "C:\\x.png"):
        assert safe_figure_name(bad) is None


def test_table_alignment_becomes_class_not_style():
    html = str(markdown_to_html("| a | b |\n|:--|--:|\n| 1 | 2 |\n"))
    assert "<table>" in html and '<td class="align-right">2</td>' in html
    assert "style" not in html


def test_links_get_rel_and_keep_safe_schemes():
    html = str(markdown_to_html("[a](https://example.com) [m](mailto:x@example.com) [r](/jobs/1/)"))
    tags = [attrs for tag, attrs in parse(html).tags if tag == "a"]
    assert [t["href"] for t in tags] == ["https://example.com", "mailto:x@example.com", "/jobs/1/"]
    assert all(t["rel"] == "noopener noreferrer" for t in tags)


def test_title_and_sections_ignore_code_fences(en_report):
    assert markdown_title(en_report) == "The State of Solar Power in 2024"
    assert markdown_title("no heading here\nmore") == "no heading here"
    assert markdown_title("## Only h2 [3]\ntext") == "Only h2"
    titles = [(s.level, s.title) for s in markdown_sections(en_report)]
    assert titles == [
        (1, "The State of Solar Power in 2024"),
        (2, "Cost trends"),
        (2, "Deployment"),
        (3, "Grid integration"),
        (2, "References"),
    ]


XSS_CORPUS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.test/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</script>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;script&#62;alert(1)&#60;/script&#62;",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](javascript&#58;alert(1))",
    "[click](%6Aavascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "![x](javascript:alert(1))",
    '![x" onerror="alert(1)](figures/a.png)',
    '[x](https://ok.test "title\\" onmouseover=\\"alert(1)")',
    "<img src=x onerror=alert(1)>",
    "<img src=x onerror=alert(1)//",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<iframe src=https://evil.test></iframe>",
    "<iframe srcdoc='<script>alert(1)</script>'>",
    "<style>body{background:url(javascript:alert(1))}</style>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    '<a href="javascript:alert(1)">x</a>',
    "<a href=javascript:alert(1)>x</a>",
    "<body onload=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<object data=javascript:alert(1)>",
    "<embed src=javascript:alert(1)>",
    "<form action=javascript:alert(1)><button>x</button></form>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    "<base href=javascript:alert(1)//>",
    "<!--<script>alert(1)</script>-->",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "[a](<javascript:alert(1)>)",
    "<javascript:alert(1)>",
    '<https://ok.test/" onclick="alert(1)>',
    "[ref]: javascript:alert(1)\n\n[ref]",
    "```\n</code><script>alert(1)</script>\n```",
    "`<img src=x onerror=alert(1)>`",
    "| a |\n|---|\n| <script>alert(1)</script> |",
    "> <img src=x onerror=alert(1)>",
]

SAFE_SCHEMES = {"", "http", "https", "mailto"}


@pytest.mark.parametrize("payload", XSS_CORPUS)
def test_xss_payload_does_not_survive(payload: str):
    html = str(markdown_to_html(f"Intro text.\n\n{payload}\n\nOutro [1].", figure_url=figure_url))
    parsed = parse(html)
    for tag, attrs in parsed.tags:
        assert tag in ALLOWED_TAGS, (tag, html)
        for name, value in attrs.items():
            assert not name.startswith("on"), (name, html)
            assert name != "style", html
            if name in {"href", "src"}:
                scheme = urlsplit((value or "").strip()).scheme.lower()
                assert scheme in SAFE_SCHEMES, (value, html)
    lowered = html.lower()
    for needle in ("<script", "<iframe", "<svg", "<style", "<object", "<embed", "<img src=x", '<a href="java'):
        assert needle not in lowered, (needle, html)
    # Refused links stay as inert, escaped text; raw tags are not even shown (code blocks excepted).
    visible = "".join(parsed.text).lower()
    if "`" not in payload:
        assert "<script" not in visible and "<img" not in visible and "<iframe" not in visible, visible


@pytest.mark.parametrize("payload", [p for p in XSS_CORPUS if "<" in p])
def test_sanitizer_alone_neutralises_raw_html(payload: str):
    """Defence in depth: even raw HTML handed straight to the sanitizer comes out inert."""
    cleaned = sanitize_html(payload)
    for tag, attrs in parse(cleaned).tags:
        assert tag in ALLOWED_TAGS
        assert not any(name.startswith("on") or name == "style" for name in attrs)
        assert urlsplit((attrs.get("href") or attrs.get("src") or "").strip()).scheme in SAFE_SCHEMES
    assert "<script" not in cleaned.lower()


def test_a_second_document_on_the_page_links_to_its_own_references():
    md = "# Answer\n\nModules got cheaper [1].\n\n## References\n\n- [1] [Prices](https://example.org/p)\n"
    html = str(markdown_to_html(md, anchor_prefix="fu2-"))
    assert 'href="#fu2-ref-1"' in html and 'id="fu2-ref-1"' in html and 'id="fu2-sec-1"' in html
    assert 'id="ref-1"' not in html  # the report's own anchors stay unique on the page
    forged = str(markdown_to_html(md, anchor_prefix="x-"))  # only the renderer's own id shapes survive
    assert 'id="x-ref-1"' not in forged
