"""Clean text in: page furniture removed from fetched pages and knowledge-base documents (issue 32, item 4).

What goes: bylines, dates and "updated on" lines, reading times and view counts (alone on a line, or
glued with the page title in front of the first sentence: "…格局 作者：本报编辑部 · 更新于2025年3月14日 ·
阅读约5分钟 2023年中国…"), editor modelines (vim, emacs), badges (image-only paragraphs in Markdown,
substitution-only lines and image directives in reStructuredText), sponsor / backer / contributor
blurbs and sections, share / subscribe lines, links under a navigation label ("Related:", 相关阅读：).
English and Chinese.

What stays: every content sentence. The rules are anchored on structure first (a Markdown block from
markdown-it's tokens, an RST explicit-markup block, a whole line), and a meta run counts only when it
is delimited (start of line or a separator before it; a separator, a blank or the end of the line
after it) and holds a marked segment ("By", "作者：", "Updated", "更新于", "5 min read"): so "该政策更新于
2025年3月14日，新增三项补贴。" and "The rules were updated on March 14, 2025." are prose and stay.

Pure functions, no Django: `clean_text` (plain text, RST detected by its markup), `clean_markdown`
(Markdown source: furniture removed by line, the lines left kept byte for byte), `is_furniture` (for a
single sentence). Each is idempotent. Patterns are RE2 (research.textre), run once per line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from configparser import ConfigParser
from typing import Any

from research import textre
from research.report.sentences import sentence_bounds

__all__ = ["clean_markdown", "clean_text", "cleaned_or_whole", "extractor_config", "is_furniture", "looks_like_rst"]

# --- one line ------------------------------------------------------------------------------

_SEP_CHARS = "·|｜•丨—–"
_SEP = f"(?:\\s*[{_SEP_CHARS}]\\s*|\\s+-\\s+|\\s+)"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_CLOCK = r"(?:,?\s*\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp]\.?[Mm]\.?)?)?"
_DATE = (
    f"(?:{_MONTH}\\s+\\d{{1,2}}(?:st|nd|rd|th)?,?\\s+\\d{{4}}|\\d{{1,2}}\\s+{_MONTH},?\\s+\\d{{4}}"
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号])"
    f"{_CLOCK}"
)
_NAME_EN = r"(?:the\s+)?[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|and|&|de|van|von|der)){0,5}"
_NAME_ZH = f"[^\\s{_SEP_CHARS}，。！？、,;；：:]{{1,20}}"
_BYLINE_EN = (
    f"(?:By|BY|Written\\s+by|Posted\\s+by|Reported\\s+by|Words\\s+by|Story\\s+by|Edited\\s+by|Authors?:|Editor:)"
    f"\\s+{_NAME_EN}"
)
# Segments that say "this is page furniture" by themselves, but for English bylines (below).
_MARKED_BOUNDED = (
    # reading time and views
    r"\d{1,3}\s*-?\s*min(?:ute)?s?\.?\s+read|(?:Reading|Read)\s+time\s*:?\s*(?:about\s+|approx\.?\s+|~\s*)?"
    r"\d{1,3}\s*min(?:ute)?s?\.?"
    r"|(?:预计)?阅读(?:时间|时长|需要|需)?\s*[：:]?\s*(?:约|大约)?\s*\d{1,3}\s*分钟|(?:约|大约)?\d{1,3}\s*分钟(?:读完|阅读)"
    r"|(?:阅读|浏览)(?:量|数|次数)?\s*[：:]?\s*\d[\d,]*(?:\.\d+)?\s*[万kK]?\s*次?|\d[\d,]*(?:\.\d+)?\s*[kK]?\s+views"
    # dates with a marker
    f"|(?:Last\\s+[Uu]pdated|Updated|UPDATED|Published|PUBLISHED|First\\s+published|Posted|Modified|Last\\s+modified|Date)"
    f"(?:\\s+on)?\\s*:?\\s*{_DATE}"
    f"|(?:更新于|更新时间|最后更新|最近更新|发布于|发布时间|发表于|发表时间|发布日期|时间|日期)\\s*[：:]?\\s*{_DATE}"
    # Chinese bylines: the name ends at the first blank or separator
    f"|(?:作者|记者|编辑|责任编辑|责编|撰文|文|编者|通讯员|供稿|出品|来源)\\s*[：:/｜|]\\s*{_NAME_ZH}"
    f"|(?:本报记者|本报通讯员|特约记者)\\s*{_NAME_ZH}"
)
_MARKED = f"{_MARKED_BOUNDED}|{_BYLINE_EN}"
_SEGMENT = f"(?:{_MARKED}|{_DATE})"
_RUN = f"{_SEGMENT}(?:{_SEP}{_SEGMENT})*"
# An English name has no end of its own: "By Jane Doe The prices…" may be a byline glued to text, or
# "By March 14, 2025 prices…" a sentence. So text glued after a blank alone needs a run that ends with
# a segment that has an end (a date, a reading time); after an English byline it needs a separator.
_RUN_BOUNDED_END = f"(?:{_SEGMENT}{_SEP})*(?:{_MARKED_BOUNDED}|{_DATE})"
_MARKED_RE = textre.compile(f"(?:{_MARKED})")
_TERMINATORS = "。！？!?"
_REST = r"(?P<{name}>[^\s\p{{Ll}}].*)"  # the glued text starts a sentence: not a lower-case word
# A meta run alone on a line, or at its start after a short title and before the text it is glued to.
_META_LINE = textre.compile(
    f"^\\s*(?:(?P<title>[^\\n{_TERMINATORS}]{{0,120}}?)[\\s{_SEP_CHARS}]+)??(?:"
    f"(?P<alone>{_RUN})[\\s{_SEP_CHARS}]*$"
    f"|(?P<run>{_RUN})\\s*[{_SEP_CHARS}][\\s{_SEP_CHARS}]*{_REST.format(name='rest')}$"
    f"|(?P<run2>{_RUN_BOUNDED_END})\\s+{_REST.format(name='rest2')}$)"
)
_MODELINE = textre.compile(
    r"^\s*(?:#+|\.\.|//|;+|%+|<!--|/\*|\*)?\s*(?:"
    r"(?:vim?|ex)\s*:\s*(?:set?\s+)?[A-Za-z]+(?:=\S*)?(?:[\s:]+[A-Za-z]+(?:=\S*)?)*\s*:?"
    r"|-\*-.{0,200}?-\*-)\s*(?:-->|\*/)?\s*$"
)
_SHARE_LINE = textre.compile(
    r"^\s*(?:[-*>]\s*)?(?:Share\s+(?:this(?:\s+(?:article|story|post|page))?|on|via)\b|Share\s*:|"
    r"Subscribe\s+(?:to\s+(?:our|the)\s+(?:newsletter|mailing\s+list|channel|podcast|feed|blog)|now|today|for\s+(?:free|updates|more))|"
    r"Sign\s+up\s+for\s+(?:our|the)\s+newsletter|Get\s+our\s+newsletter|Follow\s+us\b|"
    r"分享到|分享至|分享：|欢迎订阅|订阅我们|订阅本|关注我们|扫码关注|扫描二维码|关注公众号|点击关注)",
)
_SHARE_LINE_MAX = 160
_LINE_LEAD = textre.compile(r"^\s*(?:[-*+>]\s+|\d{1,3}[.)]\s+)*")
_BLURB = textre.compile(
    r"this project exists thanks to|thank you to all (?:our|the) (?:backers|sponsors|contributors|supporters)|"
    r"thanks to all (?:our|the) (?:backers|sponsors|contributors|supporters)|"
    r"support (?:this|the) project by becoming a (?:sponsor|backer)|become a (?:sponsor|backer|patron)\b|"
    r"your logo will show up here|consider becoming (?:a|our) (?:backer|sponsor)|relies on your generous donations|"
    r"^\s*sponsored by\b|buy me a coffee|"
    r"感谢所有(?:的)?(?:贡献者|赞助者|赞助商|支持者)|成为(?:我们的)?(?:赞助商|赞助者|支持者)|赞助本项目|请考虑赞助|"
    r"(?:logo|标志)将(?:会)?(?:显示|出现)在这里|本项目的存在离不开",
    textre.I,
)
# A link to another page under a navigation label that opens its sentence ("Related: How to count your days …",
# "相关阅读：…"): the capitalised label and its colon make it a link, not prose ("e.g. see also: aspirin" stays).
_NAV_LINK = textre.compile(
    r"(?:^\s*|[!?。！？]\s*|[a-z0-9)\]]\.\s+)(?:Related(?: (?:articles?|stories|posts|reading))?|See also|Read more"
    r"|Also read|More on this|Read next|RELATED|SEE ALSO|READ MORE)\s*:|(?:^\s*|[.!?。！？]\s*)(?:相关阅读|延伸阅读"
    r"|推荐阅读|相关文章|相关链接|相关新闻|阅读更多)\s*[:：]"
)


def _strip_meta(line: str) -> str | None:
    """The line without a leading meta run (and the title before it); None when nothing is left."""
    m = _META_LINE.match(line)
    if m is None:
        return line
    run = m.group("alone") or m.group("run") or m.group("run2")
    if not _MARKED_RE.search(run):
        return line  # dates alone are not furniture: "March 14, 2025 The bank raised rates."
    rest = m.group("rest") or m.group("rest2")
    if rest is None:
        return None
    indent = line[: len(line) - len(line.lstrip())]
    return indent + rest


def _blurb(text: str) -> bool:
    return _BLURB.search(text) is not None or _NAV_LINK.search(text) is not None


def _drop_blurbs(line: str) -> str | None:
    if not _blurb(line):
        return line
    lead = _LINE_LEAD.match(line)
    start = lead.end() if lead else 0  # indentation and list / quote markers stay with the line
    body = line[start:]
    kept = [body[a:b] for a, b in sentence_bounds(body) if not _blurb(body[a:b])]
    text = "".join(kept).strip()
    return line[:start] + text if textre.search(r"\w", text) else None


def clean_line(line: str) -> str | None:
    """One line of prose without furniture; None when the whole line is furniture."""
    current: str | None = line
    for _ in range(4):  # a glued run may reveal another one; stop at a fixed point
        before = current
        if current is None or not current.strip():
            return current
        if _MODELINE.match(current):
            return None
        if len(current) <= _SHARE_LINE_MAX and _SHARE_LINE.match(current):
            return None
        current = _strip_meta(current)
        if current is not None:
            current = _drop_blurbs(current)
        if current == before:
            break
    return current


def is_furniture(sentence: str) -> bool:
    """True when cleaning would change this sentence: it holds a byline, date line, reading time,
    modeline, share line or sponsor blurb (a sentence from text indexed before cleaning existed)."""
    return clean_line(sentence) != sentence


def _clean_lines(lines: list[str], prose: list[bool], *, markdown: bool = False) -> list[str]:
    out: list[str] = []
    for line, is_prose in zip(lines, prose, strict=True):
        if not is_prose:
            out.append(line)
            continue
        # "*By Jane Doe* · **5 min read**": a Markdown line is furniture when its text without emphasis is.
        if markdown and ("*" in line or "_" in line) and clean_line(line.replace("*", "").replace("_", "")) is None:
            continue
        cleaned = clean_line(line)
        if cleaned is not None:
            out.append(cleaned)
    return out


def _join(lines: list[str]) -> str:
    text = "\n".join(line.rstrip() for line in lines)
    return textre.sub(r"\n{3,}", "\n\n", text).strip("\n")  # leading blanks of a line stay (indented code)


# --- sections about sponsors ------------------------------------------------------------------

_SPONSOR_WORDS = frozenset(
    "sponsor sponsors backer backers supporter supporters donation donations donate contributors "
    "financial code our and & gold silver bronze platinum thanks thank you to special corporate "
    "individuals organizations organisations the all".split()
)
_SPONSOR_CORE = frozenset(
    "sponsor sponsors backer backers supporter supporters donation donations donate contributors".split()
)
_SPONSOR_ZH = ("赞助", "捐赠", "捐助", "贡献者", "支持者")


def is_sponsor_heading(title: str) -> bool:
    """A heading whose section lists sponsors, backers or contributors ("Sponsors 💖", "## 赞助商")."""
    words = textre.findall(r"[a-z&]+", title.lower())
    if words and set(words) <= _SPONSOR_WORDS and set(words) & _SPONSOR_CORE:
        return True
    bare = "".join(ch for ch in title if ch.isalnum())
    return bool(bare) and len(bare) <= 12 and any(w in bare for w in _SPONSOR_ZH)


# --- reStructuredText ------------------------------------------------------------------------

_RST_DIRECTIVE = textre.compile(r"^\.\.\s+(?:\|[^|]+\|\s+)?[\w:-]+::")
_RST_EXPLICIT = textre.compile(r"^\.\.(?:\s|$)")
_RST_SUBS_ONLY = textre.compile(r"^\s*\|[^|\s][^|]*\|(?:_{0,2})(?:\s+\|[^|\s][^|]*\|(?:_{0,2}))*\s*$")
# Bibliographic fields that are bylines and dates (":Version:" and ":Web:" stay: a user may ask for them).
_RST_META_FIELD = textre.compile(
    r"^:(?:Authors?|Date|Updated|Last[ -]updated|Contact|Organization|作者|日期|更新日期|更新时间|发布日期):", textre.I
)
_ADORNMENT_CHARS = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _adornment(line: str) -> str | None:
    """The character of an RST title adornment line ("=====", "-----"), or None."""
    bare = line.rstrip()
    if len(bare) >= 3 and bare[0] in _ADORNMENT_CHARS and bare == bare[0] * len(bare):
        return bare[0]
    return None


def looks_like_rst(text: str) -> bool:
    """reStructuredText markup: a directive, or a line of substitution references (badges)."""
    # Each distinct line once: a page of 90,000 short repeated lines ("<p><b><i>x" unclosed) cost 10x plain.
    return any(_RST_DIRECTIVE.match(line) or _RST_SUBS_ONLY.match(line) for line in set(text.splitlines()))


def _rst_explicit_drop(line: str) -> bool:
    """An explicit-markup block that shows no text: a comment (modelines too), an image, a substitution."""
    body = line[2:].strip()
    if not body:
        return True  # ".." alone starts a comment
    if body.startswith("|"):
        return True  # a substitution definition: its text appears where it is referenced, if anywhere
    if body.startswith(("_", "[")):
        return False  # hyperlink targets and footnotes: kept as they are
    head, sep, _ = body.partition("::")
    if sep and head.strip().replace("-", "").isalnum():
        return head.strip() in ("image", "figure", "raw")
    return True  # no "name::": a comment


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str, str]]:
    """(first line, title line, title, adornment style) of each section title."""
    found: list[tuple[int, int, str, str]] = []
    for i in range(1, len(lines)):
        under = _adornment(lines[i])
        title = lines[i - 1]
        if under is None or not title.strip() or title[:1].isspace() or _adornment(title):
            continue
        over = i >= 2 and lines[i - 2].strip() == lines[i].strip()
        found.append((i - 2 if over else i - 1, i, title.strip(), under + ("o" if over else "")))
    return found


def _rst_keep(lines: list[str]) -> list[bool]:
    keep = [True] * len(lines)
    # Sponsor sections: from the title to the next title of the same or a higher level.
    heads = _rst_headings(lines)
    levels: dict[str, int] = {}
    for _, _, _, style in heads:
        levels.setdefault(style, len(levels))
    for n, (first, _last, title, style) in enumerate(heads):
        if not is_sponsor_heading(title):
            continue
        end = len(lines)
        for later_first, _, _, later_style in heads[n + 1 :]:
            if levels[later_style] <= levels[style]:
                end = later_first
                break
        for j in range(first, end):
            keep[j] = False
    # Explicit markup that shows no text (with its indented body) and badge lines.
    i = 0
    while i < len(lines):
        line = lines[i]
        if _RST_EXPLICIT.match(line) and _rst_explicit_drop(line):
            keep[i] = False
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()):
                if lines[i].strip():
                    keep[i] = False
                i += 1
            continue
        if _RST_SUBS_ONLY.match(line) or _RST_META_FIELD.match(line):
            keep[i] = False
        i += 1
    return keep


# --- entry points ------------------------------------------------------------------------------


def _fixed_point(clean_once: Callable[[str], str], text: str) -> str:
    """Clean until nothing changes (a removed line can leave a paragraph of badges only): idempotent."""
    for _ in range(4):
        cleaned = clean_once(text)
        if cleaned == text:
            break
        text = cleaned
    return text


def clean_text(text: str) -> str:
    """Plain text (a page's text, a PDF's, an uploaded .txt) without furniture; RST markup is read as such."""
    return _fixed_point(_clean_text_once, text.replace("\r\n", "\n").replace("\r", "\n"))


def _clean_text_once(text: str) -> str:
    lines = text.split("\n")
    if looks_like_rst(text):
        keep = _rst_keep(lines)
        lines = [line for line, k in zip(lines, keep, strict=True) if k]
    return _join(_clean_lines(lines, [True] * len(lines)))


@functools.cache
def _md_parser(*, inline: bool) -> Any:
    from mdit_py_plugins.front_matter import front_matter_plugin

    from research.report.markdown import MarkdownIt  # the one home of the Markdown parser

    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    # Block structure only for the document: inline parsing (emphasis, links) costs 15x more on adversarial
    # uploads and is needed only for the few short paragraphs that may be badges (_paragraph_is_badges).
    return md if inline else md.disable("inline")


def _html_block_is_empty(source: str) -> bool:
    """An HTML block that shows no text: a comment, or images and links only (a row of badges)."""
    import lxml.html
    from lxml import etree

    try:
        fragment = lxml.html.fragment_fromstring(source, create_parent="div")
    except (etree.ParserError, ValueError):
        return False
    for bad in fragment.xpath(".//comment()|.//script|.//style"):
        bad.drop_tree()
    return not fragment.text_content().strip()


_BADGES_MAX = 4000  # characters: a row of badges is short; longer paragraphs are not inline-parsed


def _paragraph_is_badges(content: str) -> bool:
    """Inline content made of images (and links around them) only: badges, logos."""
    if len(content) > _BADGES_MAX or not content.lstrip().startswith(("![", "[![", "<img", "<a")):
        return False
    images = 0
    for child in _md_parser(inline=True).parseInline(content)[0].children or []:
        if child.type == "image":
            images += 1
        elif child.type in ("link_open", "link_close", "softbreak", "hardbreak"):
            continue
        elif child.type == "text" and not child.content.strip():
            continue
        elif child.type == "html_inline" and child.content.lower().startswith(("<img", "<a ", "<a>", "</a")):
            images += child.content.lower().startswith("<img")
        else:
            return False
    return images > 0


def clean_markdown(text: str) -> str:
    """Markdown source without furniture, read through markdown-it's block tokens.

    Whole blocks go: front matter (author, date), image-only paragraphs (badges), HTML blocks that show
    no text, sections under a sponsor / backer / contributor heading. Lines of paragraphs and headings
    then get the line rules (modelines, meta runs, share lines, blurbs); code and tables are never touched.
    """
    return _fixed_point(_clean_markdown_once, text.replace("\r\n", "\n").replace("\r", "\n"))


def _clean_markdown_once(text: str) -> str:
    lines = text.split("\n")
    tokens = _md_parser(inline=False).parse("\n".join(lines))
    keep = [True] * len(lines)
    prose = [False] * len(lines)
    headings: list[tuple[int, int, bool]] = []  # (first line, level, sponsor?) of top-level headings

    def drop(span: list[int] | None) -> None:
        if span:
            for j in range(span[0], min(span[1], len(lines))):
                keep[j] = False

    for n, tok in enumerate(tokens):
        if tok.type == "front_matter":
            drop(tok.map)
        elif tok.type == "html_block" and tok.map and _html_block_is_empty(tok.content):
            drop(tok.map)
        elif tok.type == "paragraph_open" and tok.map:
            if _paragraph_is_badges(tokens[n + 1].content):
                drop(tok.map)
            else:
                for j in range(tok.map[0], tok.map[1]):
                    prose[j] = True
        elif tok.type == "heading_open" and tok.map:
            for j in range(tok.map[0], tok.map[1]):
                prose[j] = True
            if tok.level == 0:
                headings.append((tok.map[0], int(tok.tag[1:]), is_sponsor_heading(tokens[n + 1].content)))
    for n, (first, level, sponsor) in enumerate(headings):
        if sponsor:
            end = next((f for f, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
            drop([first, end])
    kept = [(line, p) for line, k, p in zip(lines, keep, prose, strict=True) if k]
    return _join(_clean_lines([line for line, _ in kept], [p for _, p in kept], markdown=True))


def cleaned_or_whole(text: str, clean: Callable[[str], str]) -> str:
    """`clean(text)`, or `text` itself when nothing but furniture would be left (a page or upload is never lost)."""
    cleaned = clean(text)
    return cleaned if textre.search(r"\w", cleaned) else text


def extractor_config() -> ConfigParser:
    """trafilatura's settings for main-text extraction here.

    MIN_EXTRACTED_SIZE 1 instead of 250: below that size trafilatura replaces its extraction with a
    "baseline" that flattens the whole <article> into one paragraph, which glued the title and the
    byline to the first sentence of every short page. Its other stages (external comparison, recall
    retry) still run; a page with no main text at all falls back to our own extraction.
    """
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")
    return config
