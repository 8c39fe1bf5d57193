"""The report body as the claim check reads it: code set aside, bare addresses found, all by markdown-it.

Code blocks (fenced or indented) are split off whole; inline code spans are hidden behind
placeholders (characters of a private-use plane, no letters, digits or punctuation), so the
check's sentence splitter, citation grammar and scorer never see code and never move the blanks
around it; `restore_code` puts every span back byte for byte.
"""

from __future__ import annotations

from research import textre
from research.report.claims import norm_url
from research.report.markdown import SourceMap, blocks, inline_spans, parse

__all__ = ["GONE", "PLACEHOLDER", "protected_parts", "restore_code"]

GONE = "\x01"  # where a removed address stood, until the sentence around it is judged
# A bare address in the text (not a link for the renderer: linkify is off, but still not content
# when no tool returned it). Group 1: the character before it, put back.
_BARE_URL = textre.compile(r"(^|[^(\w/\"'=<])((?:https?://|www\.)[^\s<>()\[\]\"'，。）]+)")
PLACEHOLDER = "\U000f0000"  # + two characters: the index of an inline code span hidden from the check
_PLANE = 65000


def _hide(index: int) -> str:
    return PLACEHOLDER + chr(0xF0001 + index // _PLANE) + chr(0xF0001 + index % _PLANE)


def restore_code(text: str, codes: list[str]) -> str:
    """Put back the inline code spans `protected_parts` hid."""
    if PLACEHOLDER not in text:
        return text
    out: list[str] = []
    pos = 0
    while (found := text.find(PLACEHOLDER, pos)) != -1:
        out.append(text[pos:found])
        pair = text[found + 1 : found + 3]
        index = (ord(pair[0]) - 0xF0001) * _PLANE + ord(pair[1]) - 0xF0001 if len(pair) == 2 else -1
        out.append(codes[index] if 0 <= index < len(codes) else "")
        pos = found + 3
    out.append(text[pos:])
    return "".join(out)


def protected_parts(body: str, known_urls: set[str] | None = None) -> tuple[list[tuple[str, bool]], list[str], int]:
    """`body` as markdown-it reads it: (text, is_code_block) parts, inline code hidden behind placeholders.

    With `known_urls`, bare addresses in the text (not in code, not inside a link that stays) that no
    tool returned are replaced by the removed-address mark; returns how many.
    """
    tokens, _ = parse(body, every_link=True)  # as the link policy read it (the same parse, kept)
    source = SourceMap(body)
    events: list[tuple[int, int, str]] = []  # (start, end, kind): code block, inline code, kept link
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map:
            end = source.starts[token.map[1]] if token.map[1] < len(source.starts) else len(body)
            events.append((source.starts[token.map[0]], end, "block"))
    for block in blocks(tokens):
        for span in inline_spans(block, source) or []:
            events.append((span.start, span.end, "code" if span.token.type == "code_inline" else "link"))
    events.sort()
    parts: list[tuple[str, bool]] = []
    codes: list[str] = []
    removed = 0
    text: list[str] = []
    pos = 0

    def plain(chunk: str) -> str:
        nonlocal removed
        if known_urls is None:
            return chunk

        def bare(m: textre.Match) -> str:
            nonlocal removed
            url = m.group(2).rstrip(".,;:")
            if norm_url(url) in known_urls:
                return m.group(0)
            removed += 1
            return m.group(1) + GONE + m.group(2)[len(url) :]

        return _BARE_URL.sub(bare, chunk)

    for start, end, kind in events:
        if start < pos:
            continue  # inside a code block or a link already taken
        text.append(plain(body[pos:start]))
        if kind == "block":
            parts.append(("".join(text), False))
            parts.append((body[start:end], True))
            text = []
        elif kind == "code":
            codes.append(body[start:end])
            text.append(_hide(len(codes) - 1))
        else:
            text.append(body[start:end])
        pos = end
    text.append(plain(body[pos:]))
    parts.append(("".join(text), False))
    return parts, codes, removed
