"""Markdown → sanitized HTML, plus small Markdown helpers shared by the renderers.

This module is the only place in the project allowed to call ``mark_safe``: every
string it marks safe has gone through the nh3 allowlist sanitizer first.

Defence in depth: markdown-it runs with raw HTML disabled (so ``<script>`` in a
report is escaped text), markdown-it's own link validator drops ``javascript:``
and friends, and nh3 then enforces a tag / attribute / URL-scheme allowlist on
whatever the renderer produced.
"""

from __future__ import annotations

import html as html_lib
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

import nh3
from django.core.cache import cache
from django.utils.safestring import SafeString, mark_safe

from research import textre
from research.report.citations import CITATION, find_citation_markers
from research.report.links import safe_figure_name
from research.report.markdown import MarkdownIt, StateCore, Token, new_parser, parse, parser
from research.report.rawhtml import strip_raw_html
from research.report.references import is_references_heading

# Citations, the references heading, what a figure is and raw HTML are research.report's rules; the
# parser is its one configuration (research.report.markdown), so the page shows what the checks read.
is_reference_heading = is_references_heading
__all__ = ["is_reference_heading", "markdown_sections", "markdown_title", "markdown_to_html", "report_html_cached",
           "safe_figure_name", "sanitize_html", "strip_citations", "strip_inline_markdown"]

ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "figcaption", "figure", "h1", "h2", "h3",
        "h4", "h5", "h6", "hr", "i", "img", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup",
        "table", "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title", "class"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "li": {"id"},
    "code": {"class"},
    "th": {"class"},
    "td": {"class"},
    "h1": {"id"},
    "h2": {"id"},
    "h3": {"id"},
    "h4": {"id"},
    "h5": {"id"},
    "h6": {"id"},
    "ul": {"class"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
# Values our renderer emits for id/class; anything else is dropped by the attribute filter.
_ATTR_VALUE_RE = {
    "id": textre.compile(r"^(?:fu\d{1,5}-)?(?:ref|sec)-\d{1,5}$"),
    "class": textre.compile(r"^(?:cite|references|align-(?:left|center|right)|language-[\w+#.-]{1,40})$"),
}


@dataclass(frozen=True)
class Section:
    """A heading and the Markdown under it (up to the next heading of any level)."""

    level: int
    title: str
    body: str


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    pattern = _ATTR_VALUE_RE.get(attr)
    if pattern is not None and not pattern.match(value):
        return None
    return value


def sanitize_html(raw: str) -> str:
    """Run the allowlist sanitizer. Unknown tags are stripped; script/style lose their content too."""
    return nh3.clean(
        raw,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript"},
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def _split_citations(content: str, level: int, prefix: str = "") -> list[Token]:
    """Turn `text [1][2] more` into text / link tokens, one link per cited number."""
    out: list[Token] = []
    pos = 0
    for marker in find_citation_markers(content):
        bracket = content.index("[", marker.start)  # the blanks before it stay text
        if bracket > pos:
            out.append(_text_token(content[pos:bracket], level))
        for number in marker.numbers:
            link = Token("link_open", "a", 1, level=level)
            link.attrs = {"class": "cite", "href": f"#{prefix}ref-{number}"}
            out += [link, _text_token(f"[{number}]", level + 1), Token("link_close", "a", -1, level=level)]
        pos = marker.end
    if pos < len(content):
        out.append(_text_token(content[pos:], level))
    return out


def _text_token(content: str, level: int) -> Token:
    token = Token("text", "", 0, level=level)
    token.content = content
    return token


def _inline_text(token: Token) -> str:
    return "".join(child.content for child in token.children or [] if child.type in {"text", "code_inline"})


def _citations_rule(state: StateCore) -> None:
    """Core rule: citations become anchors; reference items get ids; headings get ids; alignment → class."""
    in_references = False
    heading_no = 0
    used: set[str] = set()  # an id is given once per page: a second list never takes the anchors
    prefix = str(state.env.get("anchor_prefix") or "")
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            heading_no += 1
            token.attrSet("id", f"{prefix}sec-{heading_no}")
            in_references = is_reference_heading(_inline_text(tokens[index + 1]))
            continue
        if token.type in {"th_open", "td_open"}:
            style = str(token.attrGet("style") or "")
            if token.attrs:
                token.attrs.pop("style", None)
            if "text-align:" in style:
                token.attrSet("class", "align-" + style.split("text-align:")[1].strip(" ;"))
            continue
        if in_references and token.type == "bullet_list_open":
            token.attrSet("class", "references")
        if in_references and token.type == "list_item_open":
            # `- [n] [Title](url)`: find the item's first inline token.
            for follower in tokens[index + 1 : index + 4]:
                if follower.type == "inline":
                    markers = find_citation_markers(follower.content.lstrip())
                    if markers and markers[0].start == 0 and len(markers[0].numbers) == 1:
                        anchor = f"{prefix}ref-{markers[0].numbers[0]}"
                        if anchor not in used:
                            used.add(anchor)
                            token.attrSet("id", anchor)
                    break
            continue
        if token.type != "inline" or not token.children or in_references:
            continue
        new_children: list[Token] = []
        link_depth = 0
        for child in token.children:
            if child.type == "link_open":
                link_depth += 1
            elif child.type == "link_close":
                link_depth -= 1
            if child.type == "text" and link_depth == 0 and "[" in child.content:
                new_children.extend(_split_citations(child.content, child.level, prefix))
            else:
                new_children.append(child)
        token.children = new_children


def _figures_rule(state: StateCore) -> None:
    """Core rule: a paragraph holding only a (servable) figure becomes <figure> with a caption."""
    tokens = state.tokens
    servable = state.env.get("figure_url") is not None
    for index in range(1, len(tokens) - 1):
        inline = tokens[index]
        if inline.type != "inline" or tokens[index - 1].type != "paragraph_open":
            continue
        children = [c for c in inline.children or [] if not (c.type == "text" and not c.content.strip())]
        if (
            servable
            and len(children) == 1
            and children[0].type == "image"
            and safe_figure_name(str(children[0].attrGet("src") or ""))
        ):
            tokens[index - 1].tag = "figure"
            tokens[index + 1].tag = "figure"
            caption = "".join(c.content for c in children[0].children or [])
            if caption:
                cap = Token("html_inline", "", 0)
                cap.content = f"<figcaption>{html_lib.escape(caption)}</figcaption>"
                inline.children = [children[0], cap]


def _make_parser(figure_url: Callable[[str], str] | None) -> MarkdownIt:
    md = new_parser()
    md.core.ruler.push("research_citations", _citations_rule)
    md.core.ruler.push("research_figures", _figures_rule)

    def render_image(self: object, tokens: list[Token], idx: int, options: object, env: object) -> str:
        token = tokens[idx]
        alt = "".join(c.content for c in token.children or [])
        name = safe_figure_name(str(token.attrGet("src") or ""))
        if name is None or figure_url is None:
            # Remote images would let a report make the reader's browser fetch arbitrary URLs: drop them.
            return ""
        src = figure_url(name)
        return f'<img src="{html_lib.escape(src, quote=True)}" alt="{html_lib.escape(alt, quote=True)}">'

    md.add_render_rule("image", render_image)
    return md


def markdown_to_html(md: str, *, figure_url: Callable[[str], str] | None = None,
                     anchor_prefix: str = "") -> SafeString:
    """Render report Markdown to sanitized HTML that templates may output as-is.

    `figure_url(name)` maps a figure's bare file name (``x.png`` for ``figures/x.png``)
    to the URL the page should use; without it, images are dropped. `anchor_prefix` is put
    before the anchors' ids (ref-N, sec-N), so a second document on one page (a follow-up answer) links
    to its own references.
    """
    raw = _make_parser(figure_url).render(md or "", {"figure_url": figure_url, "anchor_prefix": anchor_prefix})
    return mark_safe(sanitize_html(raw))  # noqa: S308 - sanitized by nh3 on the line itself


HTML_CACHE_VERSION = 2  # bump when the renderer's output changes


def report_html_cached(*, report_id: int, markdown: str, figure_url: Callable[[str], str]) -> SafeString:
    """`markdown_to_html` once per report version: a version never changes, so page views reuse it.

    The key holds the figure URL prefix too (the same version may be shown under another URL).
    """
    key = f"report-html:{HTML_CACHE_VERSION}:{report_id}:{figure_url('x.png')}"
    cached = cache.get(key)
    if isinstance(cached, str):
        return mark_safe(cached)  # noqa: S308 - stored below, after nh3
    html = markdown_to_html(markdown, figure_url=figure_url)
    cache.set(key, str(html), timeout=24 * 3600)
    return html


def default_figure_url(prefix: str) -> Callable[[str], str]:
    """A figure_url that serves figures under a URL prefix (e.g. a job's figure view)."""
    return lambda name: prefix.rstrip("/") + "/" + quote(name)


def _headings(md: str) -> list[tuple[int, str, int, int]]:
    """(level, plain title, first line, line after) of each top-level heading, as markdown-it reads them."""
    tokens, _ = parse(md or "")
    out: list[tuple[int, str, int, int]] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            title = strip_inline_markdown(tokens[index + 1].content)
            out.append((int(token.tag[1]), title, token.map[0], token.map[1]))
    return out


def markdown_title(md: str, default: str = "") -> str:
    """The first `# Title` (any level if there is no level-1), else the first non-empty line."""
    headings = _headings(md)
    first = next((h for h in headings if h[0] == 1), headings[0] if headings else None)
    if first is not None:
        return strip_citations(first[1])
    for line in (md or "").splitlines():
        if line.strip():
            return strip_inline_markdown(line.strip().lstrip("#>-* "))[:200]
    return default


def markdown_sections(md: str) -> list[Section]:
    """Split Markdown at headings (outside code). Text before the first heading is level 0."""
    lines = (md or "").split("\n")
    sections: list[Section] = []
    level, title, start = 0, "", 0
    for heading_level, heading_title, first, after in _headings(md):
        body = "\n".join(lines[start:first]).strip("\n")
        if title or body.strip():
            sections.append(Section(level, title, body))
        level, title, start = heading_level, heading_title, after
    body = "\n".join(lines[start:]).strip("\n")
    if title or body.strip():
        sections.append(Section(level, title, body))
    return sections


def strip_citations(text: str) -> str:
    text = CITATION.sub("", text)
    return textre.sub(r"\s+([,.;:!?，。；：！？])", r"\1", text).strip()


def strip_inline_markdown(text: str) -> str:
    """Plain text of one line of inline Markdown: links keep their text, images and markup go.

    markdown-it's own inline tokenizer does the work (linear time; the regexes this replaced
    backtracked quadratically on lines like `_a _a _a …`), then tag-like text is dropped.
    """
    out: list[str] = []
    for token in parser().parseInline(text or ""):
        for child in token.children or []:
            if child.type in {"text", "code_inline"}:
                out.append(child.content)
            elif child.type in {"softbreak", "hardbreak"}:
                out.append(" ")
    plain, _inside = strip_raw_html("".join(out), None)
    return " ".join(plain.split())
