"""Citation finalisation: the references list comes from the source registry, never from the model."""

from __future__ import annotations

import re
from dataclasses import dataclass

from research.agents.text import is_chinese
from research.agents.types import SourceRef

_FENCE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)
# [3] or [3, 5] or [3,5,7]; not a Markdown link text like [3](url) and not an image.
_CITE = re.compile(r"(?<!!)\[(\d{1,4}(?:\s*,\s*\d{1,4})*)\](?!\()")
_REF_HEADING = re.compile(r"^#{1,6}\s*(references|sources|bibliography|参考文献|参考资料|引用)\s*$", re.I | re.M)


@dataclass
class FinalReport:
    markdown: str
    cited: list[int]
    removed: int  # citation numbers the model wrote that match no source


def _strip_reference_section(md: str) -> str:
    match = _REF_HEADING.search(md)
    return md[: match.start()].rstrip() + "\n" if match else md


def _fix_citations(text: str, known: set[int], cited: list[int]) -> tuple[str, int]:
    removed = 0

    def repl(match: re.Match[str]) -> str:
        nonlocal removed
        numbers = [int(n) for n in match.group(1).split(",")]  # int() ignores the spaces; no regex
        kept = [n for n in numbers if n in known]
        removed += len(numbers) - len(kept)
        for n in kept:
            if n not in cited:
                cited.append(n)
        return "".join(f"[{n}]" for n in kept)

    return _CITE.sub(repl, text), removed


def references_markdown(sources: list[SourceRef], locale: str) -> str:
    heading = "## 参考文献" if is_chinese(locale) else "## References"
    lines = [heading, ""]
    for src in sources:
        title = (src.title or src.url).replace("[", "(").replace("]", ")").strip()
        if src.kind == "kb" or not src.url.startswith(("http://", "https://")):
            label = "知识库" if is_chinese(locale) else "knowledge base"
            lines.append(f"- [{src.number}] {title} ({label})")
        else:
            url = src.url.replace(")", "%29").replace(" ", "%20")
            lines.append(f"- [{src.number}] [{title}]({url})")
    return "\n".join(lines) + "\n"


def finalize_report(md: str, sources: list[SourceRef], *, locale: str) -> FinalReport:
    """Drop citations to unknown sources, drop any model-written references, append the registry's list."""
    known = {s.number for s in sources}
    body = _strip_reference_section(md)
    cited: list[int] = []
    removed = 0
    parts = _FENCE.split(body)
    for i, part in enumerate(parts):
        if i % 2 == 0:  # outside code
            parts[i], n = _fix_citations(part, known, cited)
            removed += n
    body = "".join(parts).rstrip() + "\n"
    by_number = {s.number: s for s in sources}
    listed = [by_number[n] for n in sorted(cited)]
    if listed:
        body += "\n" + references_markdown(listed, locale)
    return FinalReport(markdown=body, cited=sorted(cited), removed=removed)
