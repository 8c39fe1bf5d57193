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
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from research import textre

# `[3]`, `[3, 7]`, `[3，7]` (full-width comma in Chinese text).
CITATION_RE = textre.compile(r"\[(\d{1,4}(?:\s*[,，]\s*\d{1,4})*)\]")
REFERENCE_HEADINGS = frozenset(
    {
        "references",
        "reference",
        "sources",
        "bibliography",
        "works cited",
        "参考文献",
        "参考资料",
        "引用",
        "来源",
        "资料来源",
    }
)
# A figure name is one path component with an image extension: no directories, no "..", no scheme.
_FIGURE_NAME_RE = textre.compile(r"^[\w][\w.\- ]{0,150}\.(?:png|jpe?g|gif|webp)$", textre.IGNORECASE)
_HEADING_RE = textre.compile(r"^(#{1,6})\s+(.*)$")  # the closing #s are cut in _heading_text (no backtracking)
_FENCE_RE = textre.compile(r"^\s{0,3}(`{3,}|~{3,})")
# Raw HTML written in a report (or smuggled in as entities, which markdown-it decodes to text):
# tags are removed from the visible text and these elements lose their content as well.
# Scanned by hand with str.find (see _raw_tags), never with a backtracking pattern: report text
# is up to 500k characters and the scan runs on the web server.
_TAG_NAME_RE = textre.compile(r"<(/?)([A-Za-z][\w:-]*)")
_DROP_CONTENT = frozenset(
    {"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript", "textarea"}
)

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


def safe_figure_name(src: str) -> str | None:
    """Return the bare file name if `src` names a job figure (`figures/x.png`, `./x.png`), else None."""
    src = src.strip()
    for prefix in ("./", "figures/", "./figures/"):
        if src.startswith(prefix):
            src = src[len(prefix) :]
            break
    if "/" in src or "\\" in src or ".." in src or ":" in src:
        return None
    return src if _FIGURE_NAME_RE.match(src) else None


def is_reference_heading(title: str) -> bool:
    return title.strip().strip(":：").strip().lower() in REFERENCE_HEADINGS


class _Finder:
    """`text.find(needle, pos)` with the answer remembered while `pos` has not passed it.

    Asking again from a later start reuses the last hit, so a scan that asks at every `<`
    reads the text once in all (linear), not once per `<` (quadratic).
    """

    def __init__(self, text: str, needle: str) -> None:
        self.text, self.needle, self.hit, self.start = text, needle, -1, len(text) + 1

    def __call__(self, pos: int) -> int:
        if not (self.start <= pos and (self.hit == -1 or self.hit >= pos)):
            self.hit, self.start = self.text.find(self.needle, pos), pos
        return self.hit


def _raw_tags(text: str) -> list[tuple[int, int, bool, str]]:
    """(start, end, closing, lower-case name) of each tag-like run: `<!-- … -->`, `<name …>`, `</name>`.

    A tag ends at the first `>` outside quotes. One left open at the end of the text
    (`<img src=x onerror=…`) counts when it has an attribute (whitespace, then `=`).
    Linear time: a scan that stops at an unquoted `<` resumes there, and after one scan ran
    off the end inside a quote, quotes are no longer special (so no scan is repeated).
    """
    find = {needle: _Finder(text, needle) for needle in ("<", ">", '"', "'", "=", "-->")}
    found: list[tuple[int, int, bool, str]] = []
    quotes = True
    pos = 0
    while (start := find["<"](pos)) != -1:
        if text.startswith("<!--", start):
            close = find["-->"](start + 4)
            end = len(text) if close == -1 else close + 3
            found.append((start, end, False, "!--"))
            pos = end
            continue
        match = _TAG_NAME_RE.match(text, start)
        after = match.end() if match else start
        if match is None or not (after == len(text) or text[after] in "/>" or text[after].isspace()):
            pos = start + 1
            continue
        end, outcome = _tag_body_end(text, after, find, quotes)
        closing, name = bool(match.group(1)), match.group(2).lower()
        if outcome == "tag":
            found.append((start, end, closing, name))
            pos = end
        elif outcome == "lt":
            pos = end  # a `<` we reached: the next candidate
        elif find["="](after) != -1 and text[after : after + 1].isspace():
            found.append((start, len(text), closing, name))  # open at the end, with an attribute
            break
        else:
            quotes, pos = False, start + 1
    return found


def _tag_body_end(text: str, pos: int, find: dict[str, _Finder], quotes: bool) -> tuple[int, str]:
    """Walk a tag's attributes from `pos`: ("tag", index after `>`), ("lt", index of `<`) or ("eof", len)."""
    while True:
        gt, lt = find[">"](pos), find["<"](pos)
        marks = [gt, lt] + ([find['"'](pos), find["'"](pos)] if quotes else [])
        first = min((m for m in marks if m != -1), default=-1)
        if first == -1:
            return len(text), "eof"
        if first == gt:
            return gt + 1, "tag"
        if first == lt:
            return lt, "lt"
        close = find[text[first]](first + 1)
        if close == -1:
            return len(text), "eof"
        pos = close + 1


def _strip_raw_html(text: str, inside: str | None) -> tuple[str, str | None]:
    """Remove tag-like text; `inside` is the dangerous element we are in (its content is dropped too)."""
    out: list[str] = []
    pos = 0
    for start, end, closing, name in _raw_tags(text):
        if inside is None:
            out.append(text[pos:start])
        if inside is None and not closing and name in _DROP_CONTENT and text[end - 2 : end] != "/>":
            inside = name
        elif inside is not None and closing and name == inside:
            inside = None
        pos = end
    if inside is None:
        out.append(text[pos:])
    return "".join(out), inside


def _raw_html_rule(state: StateCore) -> None:
    """Core rule: with html=False raw HTML arrives as text; drop it instead of printing tag soup."""
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type != "inline" or not token.children:
            continue
        # An unclosed <script> hides the rest of its own block only, never the rest of the report.
        inside: str | None = None
        kept: list[Token] = []
        for child in token.children:
            if child.type == "text":
                child.content, inside = _strip_raw_html(child.content, inside)
                if child.content:
                    kept.append(child)
            elif inside is None or child.type not in {"softbreak", "hardbreak", "code_inline"}:
                kept.append(child)
        token.children = kept
        emptied = all(c.type in {"softbreak", "hardbreak"} or not c.content.strip() for c in kept)
        if emptied and 0 < index < len(tokens) - 1 and tokens[index - 1].type == "paragraph_open":
            tokens[index - 1].hidden = tokens[index + 1].hidden = True  # no empty <p> left behind
            token.children = []


def _split_citations(content: str, level: int, prefix: str = "") -> list[Token]:
    """Turn `text [1][2] more` into text / link tokens, one link per cited number."""
    out: list[Token] = []
    pos = 0
    for match in CITATION_RE.finditer(content):
        if match.start() > pos:
            out.append(_text_token(content[pos : match.start()], level))
        for number in textre.split(r"[,，]", match.group(1)):
            link = Token("link_open", "a", 1, level=level)
            link.attrs = {"class": "cite", "href": f"#{prefix}ref-{int(number)}"}
            out += [link, _text_token(f"[{int(number)}]", level + 1), Token("link_close", "a", -1, level=level)]
        pos = match.end()
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
                    match = textre.match(r"\s*\[(\d{1,4})\]", follower.content)
                    if match:
                        token.attrSet("id", f"{prefix}ref-{int(match.group(1))}")
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
            if child.type == "text" and link_depth == 0 and CITATION_RE.search(child.content):
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
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.core.ruler.push("research_raw_html", _raw_html_rule)
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


HTML_CACHE_VERSION = 1  # bump when the renderer's output changes


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


def _iter_lines_outside_fences(md: str) -> list[tuple[str, bool]]:
    """(line, inside_fence) pairs, so a `# comment` in a code block is not taken for a heading."""
    out: list[tuple[str, bool]] = []
    fence: str | None = None
    for line in (md or "").splitlines():
        match = _FENCE_RE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
            out.append((line, True))
            continue
        if fence is not None:
            out.append((line, True))
            if line.strip().startswith(fence) and set(line.strip()) <= {fence[0]}:
                fence = None
            continue
        out.append((line, False))
    return out


def _heading_text(match: textre.Match) -> str:
    """A heading's text without an optional closing sequence (`## Title ##`)."""
    text = match.group(2).strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.strip()
    return text


def markdown_title(md: str, default: str = "") -> str:
    """The first `# Title` (any level if there is no level-1), else the first non-empty line."""
    first_heading = ""
    for line, fenced in _iter_lines_outside_fences(md):
        match = None if fenced else _HEADING_RE.match(line)
        if match:
            title = strip_citations(strip_inline_markdown(_heading_text(match)))
            if len(match.group(1)) == 1:
                return title
            first_heading = first_heading or title
    if first_heading:
        return first_heading
    for line, _ in _iter_lines_outside_fences(md):
        if line.strip():
            return strip_inline_markdown(line.strip().lstrip("#>-* "))[:200]
    return default


def markdown_sections(md: str) -> list[Section]:
    """Split Markdown at headings (outside code fences). Text before the first heading is level 0."""
    sections: list[Section] = []
    level, title = 0, ""
    body: list[str] = []
    for line, fenced in _iter_lines_outside_fences(md):
        match = None if fenced else _HEADING_RE.match(line)
        if match:
            if title or "".join(body).strip():
                sections.append(Section(level, title, "\n".join(body).strip("\n")))
            level, title, body = len(match.group(1)), strip_inline_markdown(_heading_text(match)), []
        else:
            body.append(line)
    if title or "".join(body).strip():
        sections.append(Section(level, title, "\n".join(body).strip("\n")))
    return sections


def strip_citations(text: str) -> str:
    text = CITATION_RE.sub("", text)
    return textre.sub(r"\s+([,.;:!?，。；：！？])", r"\1", text).strip()


_INLINE_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["strikethrough"])


def strip_inline_markdown(text: str) -> str:
    """Plain text of one line of inline Markdown: links keep their text, images and markup go.

    markdown-it's own inline tokenizer does the work (linear time; the regexes this replaced
    backtracked quadratically on lines like `_a _a _a …`), then tag-like text is dropped.
    """
    out: list[str] = []
    for token in _INLINE_PARSER.parseInline(text or ""):
        for child in token.children or []:
            if child.type in {"text", "code_inline"}:
                out.append(child.content)
            elif child.type in {"softbreak", "hardbreak"}:
                out.append(" ")
    plain, _inside = _strip_raw_html("".join(out), None)
    return " ".join(plain.split())
