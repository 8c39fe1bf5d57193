"""Check that every cited sentence of a report is found in the source it cites.

Independent of the engines' own sentence splitter on purpose, so it can catch their mistakes.
Used by the offline engine's unit tests and by end-to-end tests on whole jobs.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# One citation group: [1], [1][2], [1, 2], [1，2] with optional spaces in between.
_CITE_GROUP = re.compile(r"(?:\s*\[\d{1,4}(?:\s*[,，]\s*\d{1,4})*\](?!\())+")
_NUMBER = re.compile(r"\d{1,4}")
_REFERENCES = re.compile(r"^#{1,6}\s*(references|sources|bibliography|参考文献|参考资料|引用)\s*$", re.I)
_LINE_PREFIX = re.compile(r"^(?:>\s*)*(?:[-*+]\s+|\d{1,3}[.)]\s+)?")
# A sentence ends at English punctuation followed by a space and a non-lowercase letter, or at
# Chinese full stops. Crude on purpose: the check below widens short pieces.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*\s+(?=[^a-z\s])|(?<=[。！？])")
_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "\u00a0": " "})
_MIN_CHARS = 20  # a cited piece shorter than this is widened to the previous piece ("U.S." splits)


def normalize(text: str) -> str:
    """Compare text "nearly": NFKC, straight quotes, case-folded, all whitespace removed."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return re.sub(r"\s+", "", text)


def cited_sentence(segment: str) -> str:
    """The sentence right before a citation: the last piece of `segment`, widened if too short."""
    segment = segment.strip().lstrip(".,;:!?。，；：！？ ")
    pieces = [p for p in _SENTENCE_END.split(segment) if p.strip()]
    if not pieces:
        return ""
    sentence = pieces.pop()
    while pieces and len(normalize(sentence)) < _MIN_CHARS:
        sentence = pieces.pop() + " " + sentence
    return sentence.strip()


def check_citations(report_md: str, sources: dict[int, str]) -> list[str]:
    """Problems with the report's citations; an empty list means every cited sentence checks out.

    `sources` maps citation numbers to the text of the registered source. For each citation
    group ("… sentence. [3]", "…句子。[1][2]", "… [1, 2]") the sentence before it must be found,
    up to whitespace, case and quote style, in at least one of the sources it cites, and every
    number must be a known source. Headings, code blocks and a trailing references section are
    skipped; a citation group with no text before it (a references list entry) is ignored.
    """
    normalized = {n: normalize(text) for n, text in sources.items()}
    problems: list[str] = []
    in_code = False
    for lineno, raw in enumerate(report_md.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not line:
            continue
        if _REFERENCES.match(line):
            break
        if line.startswith("#"):
            continue
        line = _LINE_PREFIX.sub("", line, count=1)
        start = 0
        for match in _CITE_GROUP.finditer(line):
            segment, start = line[start : match.start()], match.end()
            sentence = cited_sentence(segment)
            if not sentence:
                continue
            numbers = [int(n) for n in _NUMBER.findall(match.group())]
            unknown = [n for n in numbers if n not in normalized]
            for n in unknown:
                problems.append(f"line {lineno}: [{n}] is not a registered source: {sentence!r}")
            known = [n for n in numbers if n in normalized]
            if known and not any(normalize(sentence) in normalized[n] for n in known):
                cites = "".join(f"[{n}]" for n in known)
                problems.append(f"line {lineno}: sentence not found in source {cites}: {sentence!r}")
    return problems


_REF_ENTRY = re.compile(r"^\s*[-*]\s*\[(\d{1,4})\]\s*(?:\[(.*?)\]\((\S+?)\)|(.*?)\s*\((?:knowledge base|知识库)\))\s*$")


def report_sources(report_md: str, sources: Any) -> dict[int, str]:
    """The report's own citation numbers → source text, read through its references list.

    Final reports number their references 1..n in order of first use, so `[1]` is the first
    listed source, not registry source 1. `sources` are objects with number, url, title and text
    (Source rows or SourceRefs); URLs match (titles for knowledge-base entries).
    """
    rows = list(sources)
    by_url = {s.url.replace("%29", ")").replace("%20", " "): s for s in rows if s.url}
    by_title = {s.title.strip(): s for s in rows}
    heading = re.search(r"^#{1,6}\s*(references|sources|参考文献|参考资料)\s*$", report_md, re.I | re.M)
    if heading is None:
        return {s.number: s.text for s in rows}
    mapping: dict[int, str] = {}
    for line in report_md[heading.end() :].splitlines():
        entry = _REF_ENTRY.match(line)
        if entry:
            url, title = entry.group(3), entry.group(4)
            key = url.replace("%29", ")").replace("%20", " ") if url else ""
            found = by_url.get(key) if url else by_title.get((title or "").strip())
            if found is not None:
                mapping[int(entry.group(1))] = found.text
    return mapping
