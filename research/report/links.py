"""What a link is, and the link policy: one rule for model-written reports and user edits.

A link is what markdown-it makes one: an inline link (any spelling CommonMark allows: `<…>`
destinations, entities, backslash escapes, titles, reference-style `[t][r]` / `[t]`), an image,
an autolink, a reference definition. Its destination is markdown-it's own normalized `href`, so
`HTTPS://`, `&#104;ttps:` and `https\\:` are the same address as the page will show.

The policy: a link stays only when its destination is a URL a tool returned for this job
(`allowed_urls`), an anchor on the page (`#…`) or one of the job's own figures. Anything else is
unlinked in the Markdown itself, so every output derived from it (page, `report.md`, PDF, deck)
has it unlinked: a link keeps its text, an image goes, an http(s) autolink loses its address
(a bare address nobody returned is not content), an email or other autolink becomes its text,
and a reference definition is removed. Schemes other than http(s) are never links.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from research import textre
from research.report.markdown import Block, SourceMap, Token, blocks, inline_spans, normalized, parse, parser

__all__ = ["LinkPolicy", "Unlinked", "safe_figure_name", "unlink", "url_key"]

# A figure name is one path component with an image extension: no directories, no "..", no scheme.
_FIGURE_NAME_RE = textre.compile(r"^[\w][\w.\- ]{0,150}\.(?:png|jpe?g|gif|webp)$", textre.IGNORECASE)
_MAX_PASSES = 12  # each pass removes link syntax, so the text shrinks; nesting is shallow in practice


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


def url_key(url: str) -> str:
    """One spelling per address: markdown-it's normalization, then case and a trailing slash ignored."""
    url = parser().normalizeLink(url.strip())
    url = url.replace("%29", ")").replace("%20", " ").replace("%28", "(")
    return url.rstrip("/").lower()


@dataclass(frozen=True)
class LinkPolicy:
    allowed_urls: frozenset[str]  # url_key of each URL a tool returned for the job

    @classmethod
    def of(cls, urls: Iterable[str]) -> LinkPolicy:
        return cls(frozenset(url_key(u) for u in urls if u))

    def allows(self, href: str) -> bool:
        href = href.strip()
        if href.startswith("#") or safe_figure_name(href):
            return True
        if not href.lower().startswith(("http://", "https://")):
            return False  # mailto:, ftp:, javascript:, relative paths, `https:evil` without slashes …
        return url_key(href) in self.allowed_urls


@dataclass
class Unlinked:
    markdown: str
    removed: int = 0  # links, images, autolinks and definitions taken out


def _href(token: Token) -> str:
    return str(token.attrGet("src") if token.type == "image" else token.attrGet("href") or "")


def _block_edits(
    block: Block, source: SourceMap, policy: LinkPolicy, lost: str, gone: str
) -> list[tuple[int, int, str]] | None:
    spans = inline_spans(block, source)
    if spans is None:
        return None
    edits: list[tuple[int, int, str]] = []
    covered = -1
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        token = span.token
        if span.start < covered or token.type == "code_inline" or policy.allows(_href(token)):
            continue
        text = source.text
        if token.type == "image":
            replacement = ""
        elif token.markup == "autolink":
            inner = text[span.start + 1 : span.end - 1]
            replacement = gone if inner.lower().startswith(("http://", "https://")) else inner
        else:
            label = span.label or (span.start + 1, span.start + 1)
            replacement = text[label[0] : label[1]] + lost
        edits.append((span.start, span.end, replacement))
        covered = span.end
    return edits


def _fallback(block: Block, source: SourceMap) -> list[tuple[int, int, str]]:
    """A block whose offsets cannot be mapped (tabs expanded inside a list): its brackets are neutralized."""
    assert block.token.map is not None
    start = source.starts[block.token.map[0]]
    last = block.token.map[1]
    end = source.starts[last] - 1 if last < len(source.starts) else len(source.text)
    original = source.text[start:end]
    return [(start, end, original.replace("[", "［").replace("]", "］").replace("<", "‹"))]


def _has_bad_link(block: Block, policy: LinkPolicy) -> bool:
    return any(
        c.type in ("link_open", "image") and not policy.allows(_href(c)) for c in block.token.children or []
    )


def _pass(text: str, policy: LinkPolicy, lost: str, gone: str) -> tuple[str, int]:
    tokens, env = parse(text, every_link=True)
    source = SourceMap(text)
    edits: list[tuple[int, int, str]] = []
    for definition in env.get("references", {}).values():
        if not policy.allows(str(definition.get("href", ""))) and definition.get("map"):
            first, last = definition["map"]
            line = source.line(first)
            bracket = line.find("[")
            prefix = line[:bracket] if line[:bracket].strip() else ""  # "> " or "- " of a container
            end = source.starts[last] - 1 if last < len(source.starts) else len(text)
            edits.append((source.starts[first], end, prefix.rstrip()))
    for block in blocks(tokens):
        found = _block_edits(block, source, policy, lost, gone)
        if found is None:
            found = _fallback(block, source) if _has_bad_link(block, policy) else []
        edits.extend(found)
    if not edits:
        return text, 0
    out: list[str] = []
    last_end = 0
    for start, end, replacement in sorted(edits):
        if start < last_end:
            continue
        out.append(text[last_end:start])
        out.append(replacement)
        last_end = end
    out.append(text[last_end:])
    return "".join(out), len(edits)


def unlink(md: str, policy: LinkPolicy, *, lost: str = "", gone: str = "") -> Unlinked:
    """Apply the link policy to `md` (see the module doc); text outside the links is kept byte for byte.

    `lost` is put after the text of an unlinked link and `gone` where an autolink's address was
    (the claim check uses them to know which sentence lost its pointer).
    """
    text = normalized(md)
    result = Unlinked(text)
    for _ in range(_MAX_PASSES):
        text, removed = _pass(text, policy, lost, gone)
        if not removed:
            break
        result.removed += removed
    else:
        # Still links after every pass (never seen): no bracket or angle bracket is left to form one.
        text = text.replace("[", "［").replace("<", "‹")
    result.markdown = text
    return result
