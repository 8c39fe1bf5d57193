"""Raw HTML in a report: the shared parser reads it as text (html off), and this rule drops it.

A core rule of the one parser (research.report.markdown), so the page, the PDF, the deck and the
podcast all read the same text: `<script>alert(1)</script>` is neither shown nor read aloud.
"""

from __future__ import annotations

from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from research import textre

# Raw HTML written in a report (or smuggled in as entities, which markdown-it decodes to text):
# tags are removed from the visible text and these elements lose their content as well.
# Scanned by hand with str.find (see _raw_tags), never with a backtracking pattern: report text
# is up to 500k characters and the scan runs on the web server.
_TAG_NAME_RE = textre.compile(r"<(/?)([A-Za-z][\w:-]*)")
_DROP_CONTENT = frozenset(
    {"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript", "textarea"}
)


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


def strip_raw_html(text: str, inside: str | None) -> tuple[str, str | None]:
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


def raw_html_rule(state: StateCore) -> None:
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
                child.content, inside = strip_raw_html(child.content, inside)
                if child.content:
                    kept.append(child)
            elif inside is None or child.type not in {"softbreak", "hardbreak", "code_inline"}:
                kept.append(child)
        token.children = kept
        emptied = all(c.type in {"softbreak", "hardbreak"} or not c.content.strip() for c in kept)
        if emptied and 0 < index < len(tokens) - 1 and tokens[index - 1].type == "paragraph_open":
            tokens[index - 1].hidden = tokens[index + 1].hidden = True  # no empty <p> left behind
            token.children = []
