"""Claim checking for finished reports: every cited sentence against the passage it cites.

`report_check(markdown, sources)` is the one entry point, run on the reporter's output and on
report edits before they are saved. It

- drops citations to sources that are not in the job's registry, and inline links, autolinks and
  bare URLs whose address no tool returned (their link text stays, the address goes; a short
  pointer left with nothing to point at, "More at <url>.", goes whole);
- scores each cited sentence against the best passage (a window of a few sentences) of each source
  it cites: the share of the sentence's terms, and all of its numbers, found in that passage;
- marks sentences that fail the check with a visible marker, and removes those the check is sure
  about: almost none of their terms occur in the cited source, or the lexical test failed and a
  `judge` (the model, asked separately) says the passage does not support them either;
- checks sentences without a citation that state a fact (a number, a date, a named study or
  organisation, a comparison), and every sentence whose only citation or link was removed as
  invented, against all of the job's sources: a source that supports it gets cited; otherwise it
  is removed from generated reports, or marked when the check cannot decide (user edits are only
  marked, never cut);
- renumbers citations 1..n in order of first use and rebuilds the references list, so the
  numbering has no gaps.

The score is lexical (research.ir's tokenizer: stemmed English words, CJK bigrams). A sentence in
another script than its source (a Chinese report over English pages) cannot be scored that way;
it counts as unchecked unless a `judge` (e.g. a model) is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from pydantic import BaseModel

from research import scripts, textre
from research.agents.citations import CITATION, DROPPED_MARK, citation_numbers, references_markdown
from research.agents.text import is_chinese
from research.agents.types import ChatModel, SourceRef
from research.ir import tokenize

__all__ = [
    "CheckResult",
    "Claim",
    "Judge",
    "check_claim",
    "cited_sentences",
    "citation_targets",
    "is_factual",
    "line_sentences",
    "norm_url",
    "plain_text",
    "report_body",
    "report_check",
    "support_score",
    "uncited_factual_sentences",
]

# Thresholds on the share of a sentence's terms found in the cited passage.
SUPPORTED = 0.6  # at or above: supported (and every number of the sentence is in the passage)
SURE_UNSUPPORTED = 0.2  # below (with enough terms to judge): removed rather than marked
_MIN_TERMS_TO_REMOVE = 6
# An uncited claim scoring below this against every source (a missing number caps it at 0.3) is
# taken as not in the sources at all: removed from a generated report when no judge says otherwise.
SURE_UNCITED = 0.35
_WINDOW = 3  # sentences per passage

_FENCE = textre.compile(r"(```.*?```|`[^`\n]*`)", textre.S)
_CITE = CITATION  # research.agents.citations' grammar: [3], [3, 4], [3-5], [3；4]; group 2 holds the items
_TRAILING_CITE = textre.compile_guarded(  # not a link: `[3](url)`; anchored (`.match`), so nothing to resume
    r"[ \t]*\[[\d\s,，;；、\-–]+\]", accept=lambda m: not m.string.startswith("(", m.end())
)
_REF_HEADING = textre.compile(
    r"^#{1,6}\s*(references|sources|bibliography|参考文献|参考资料|引用)\s*$", textre.I | textre.M
)
_REF_LINE = textre.compile(
    r"^\s*[-*]\s*\[(\d{1,4})\]\s*(?:\[(.*?)\]\((\S+?)\)|(.*?)\s*\((?:knowledge base|知识库)\))\s*$"
)
_LINK = textre.compile(r"(!?)\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = textre.compile(r"<(https?://[^>\s]+)>")
# Group 1: the character before the address (not part of a link or an attribute), put back by the caller.
_BARE_URL = textre.compile(r"(^|[^(\w/\"'=<])((?:https?://|www\.)[^\s<>()\[\]\"'，。）]+)")
_NUMBER = textre.compile(r"\d+(?:[.,]\d+)*")
_TERMINATOR = textre.compile(r"[.!?。！？]")
_CJK = textre.compile(f"[{scripts.HAN}]")
_LONE_MARKS = ".,;:!?。，；：！？"
_BLANKS = textre.compile(r"[ \t]+")
_MARKER_EN = " *(unverified)*"
_MARKER_ZH = "*（未经核实）*"
_MARKERS = (_MARKER_EN.strip(), _MARKER_ZH)
_GONE = "\x01"  # where a removed address stood, until the sentence around it is judged
_LOST = DROPPED_MARK  # after an inline link whose address was removed, or where finalize_report cut a citation

# What makes an uncited sentence a factual claim that needs a source. Kept to simple alternations
# (no lookarounds) so they port to a linear-time engine.
_FACT_DIGIT = textre.compile(r"\d")
_FACT_WORDS_EN = textre.compile(
    r"\b(?:than|compared|versus|vs|twice|double|doubled|tripled|halved|half|times|percent|per cent|"
    r"most|least|largest|smallest|highest|lowest|biggest|fastest|slowest|cheapest|best|worst|"
    r"study|studies|trial|trials|survey|surveys|reported|researchers|scientists|analysts|according|"
    r"university|institute|agency|ministry|commission|association|organisation|organization|"
    r"million|billion|trillion|thousand|hundred|dozen)\b",
    textre.I,
)
_FACT_MONTHS = textre.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b"
)
_FACT_WORDS_ZH = textre.compile(
    r"高于|低于|多于|少于|大于|小于|超过|不到|倍|一半|百分之|万|亿|研究显示|研究表明|调查显示|报告显示|据统计|"
    r"试验|大学|研究所|研究院|协会|委员会|部门发布|年[0-9一二三四五六七八九十]+月"
)

# (claim, passage) -> True (supported), False (not supported) or None (cannot tell).
Judge = Callable[[str, str], "bool | None"]

logger = logging.getLogger(__name__)


class Verdict(BaseModel):
    supported: bool


def model_judge(llm: ChatModel, locale: str, *, max_calls: int = 20) -> Judge:
    """A judge backed by the model (an LLMClient): asked only for claims the lexical test could not
    pass or could not score, at most `max_calls` times per report. A failed or unusable answer is
    "cannot tell", so the lexical verdict stands."""
    from research.agents.prompts import load_prompt

    system = load_prompt("verifier", locale)
    calls = 0

    def judge(claim: str, passage: str) -> bool | None:
        nonlocal calls
        if calls >= max_calls:
            return None
        calls += 1
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"## Claim\n{claim}\n\n## Passage\n{passage[:3000]}"},
        ]
        try:
            return bool(llm.structured(messages, Verdict, agent="verifier", max_attempts=1, max_tokens=50).supported)
        except Exception as exc:  # the model is an optional second opinion: any failure means "cannot tell"
            logger.info("verifier judge unavailable (%s)", exc)
            return None

    return judge


@dataclass(frozen=True)
class Claim:
    text: str  # the sentence, citation markers and Markdown removed
    sources: tuple[int, ...]  # registry numbers it cites
    score: float  # best share of its terms found in a cited passage (0..1)
    supported: bool | None  # None: not checkable lexically (other script) and no judge
    passage: str = ""  # the best-matching passage
    lexical: bool = True  # claim and source share a script, so the score means something
    judged: bool | None = None  # the judge's verdict, when one was asked


@dataclass
class CheckResult:
    markdown: str
    cited: list[int] = field(default_factory=list)  # registry numbers, in reference-list order
    claims: list[Claim] = field(default_factory=list)
    removed_citations: int = 0  # [n] markers to no registered source
    removed_links: int = 0  # links / URLs to pages no tool returned
    flagged: int = 0  # sentences marked as unverified
    removed_claims: int = 0  # sentences removed as clearly unsupported
    uncited_checked: int = 0  # uncited factual sentences (or ones that lost an invented citation) looked up
    citations_added: int = 0  # ... found in a source, which is now cited
    uncited_flagged: int = 0  # ... marked as unverified
    uncited_removed: int = 0  # ... removed: no source says so

    @property
    def checked(self) -> int:
        return sum(1 for c in self.claims if c.supported is not None)

    @property
    def supported(self) -> int:
        return sum(1 for c in self.claims if c.supported)

    @property
    def support_rate(self) -> float | None:
        return self.supported / self.checked if self.checked else None

    def summary(self) -> dict[str, int]:
        """Counts for events and the job page."""
        return {
            "claims": len(self.claims),
            "checked": self.checked,
            "supported": self.supported,
            "unsupported_claims": self.flagged,
            "removed_claims": self.removed_claims,
            "removed_citations": self.removed_citations,
            "removed_links": self.removed_links,
            "uncited_checked": self.uncited_checked,
            "citations_added": self.citations_added,
            "uncited_flagged": self.uncited_flagged,
            "uncited_removed": self.uncited_removed,
        }


# ---------------------------------------------------------------- text helpers


def norm_url(url: str) -> str:
    url = url.strip().replace("%29", ")").replace("%20", " ").replace("%28", "(")
    return url.rstrip("/").lower()


def _cjk(text: str) -> bool:
    return len(_CJK.findall(text)) >= 4


def plain_text(text: str) -> str:
    text = _LINK.sub(lambda m: m.group(2), text)
    text = _CITE.sub(" ", text)
    for marker in _MARKERS:
        text = text.replace(marker, "")
    text = textre.sub(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+", "", text)
    text = textre.sub(r"^\s*\*\*[^*\n]{1,80}\*\*\s*[:：]\s*", "", text)  # "**Facet**: quote": the label is no claim
    text = textre.sub(r"[*_`>#]", "", text)
    words: list[str] = []
    for word in text.split():  # "a year [1]." -> "a year.": a lone mark is glued to the word before it
        if words and len(word) == 1 and word in _LONE_MARKS:
            words[-1] += word
        else:
            words.append(word)
    return " ".join(words)


def line_sentences(line: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences in one line; trailing citation markers stay with their sentence."""
    spans: list[tuple[int, int]] = []
    start, i, n = 0, 0, len(line)
    while i < n:
        match = _TERMINATOR.search(line, i)
        if match is None:
            break
        j = match.end()
        cjk_stop = match.group(0) in "。！？"
        if not cjk_stop and j < n and (line[j].isdigit() or line[j].isalnum()):
            i = j  # "3.5", "e.g.x"
            continue
        while j < n and line[j] in "\"'”’)）」":
            j += 1
        while (cite := _TRAILING_CITE.match(line, j)) is not None:
            j = cite.end()
        for marker in _MARKERS:
            if line.startswith(marker, j) or line.startswith(marker.strip(), j):
                j += len(marker) if line.startswith(marker, j) else len(marker.strip())
        if cjk_stop or j >= n or line[j].isspace():
            if not cjk_stop and j < n and line[j:].lstrip()[:1].islower():
                i = j
                continue
            spans.append((start, j))
            start = j
        i = j
    if start < n and line[start:].strip():
        spans.append((start, n))
    return spans


def cited_sentences(markdown: str) -> list[tuple[str, tuple[int, ...]]]:
    """(plain sentence, cited numbers) for each sentence of the body that carries a citation."""
    body = report_body(markdown)
    out: list[tuple[str, tuple[int, ...]]] = []
    for part_index, part in enumerate(_FENCE.split(body)):
        if part_index % 2:
            continue
        for line in part.splitlines():
            for start, end in line_sentences(line):
                sentence = line[start:end]
                numbers = tuple(citation_numbers(sentence))
                if numbers:
                    out.append((plain_text(sentence), numbers))
    return out


def report_body(markdown: str) -> str:
    match = _REF_HEADING.search(markdown)
    return markdown[: match.start()] if match else markdown


def _passages(text: str) -> list[str]:
    pieces: list[str] = []
    for block in textre.split(r"\n\s*\n|\n", text):
        block = block.strip()
        if block:
            pieces.extend(block[s:e].strip() for s, e in line_sentences(block) if block[s:e].strip())
    if len(pieces) <= _WINDOW:
        return [" ".join(pieces)] if pieces else []
    return [" ".join(pieces[i : i + _WINDOW]) for i in range(len(pieces) - _WINDOW + 1)]


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def support_score(claim: str, passage: str) -> float:
    """Share of the claim's terms found in the passage, capped below the bar when a number of the
    claim is missing from it (a wrong figure in otherwise faithful words is flagged, not removed)."""
    terms = set(tokenize(claim))
    if not terms:
        return 1.0
    share = len(terms & set(tokenize(passage))) / len(terms)
    if not _numbers(claim) <= _numbers(passage):
        return min(share, SUPPORTED / 2)
    return share


@lru_cache(maxsize=64)
def _indexed_passages(text: str) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """(passage, its terms, its numbers) for a source text, computed once per text."""
    return tuple((p, frozenset(tokenize(p)), frozenset(_numbers(p))) for p in _passages(text))


def _best_passage(claim: str, source: SourceRef) -> tuple[float, str]:
    """support_score against each passage of the source, the best one kept."""
    terms = set(tokenize(claim))
    numbers = _numbers(claim)
    if not terms:
        return 1.0, ""
    best = (0.0, "")
    for passage, found, passage_numbers in _indexed_passages(source.text):
        share = len(terms & found) / len(terms)
        score = share if numbers <= passage_numbers else min(share, SUPPORTED / 2)
        if score > best[0]:
            best = (score, passage)
            if score >= 0.999:
                break
    return best


def check_claim(claim: str, sources: Sequence[SourceRef], judge: Judge | None = None) -> Claim:
    numbers = tuple(s.number for s in sources)
    texts = [s for s in sources if s.text.strip()]
    if not texts:
        return Claim(claim, numbers, 0.0, None)
    best_score, best_passage = max((_best_passage(claim, s) for s in texts), key=lambda sp: sp[0])
    comparable = any(_cjk(claim) == _cjk(s.text[:2000]) for s in texts)
    supported: bool | None = best_score >= SUPPORTED if comparable else None
    verdict: bool | None = None
    if judge is not None and (supported is None or best_score < SUPPORTED):
        verdict = judge(claim, best_passage or texts[0].text[:2000])
        supported = verdict if verdict is not None else supported
    return Claim(claim, numbers, round(best_score, 3), supported, best_passage, comparable, verdict)


def _sure_unsupported(claim: Claim, terms: int) -> bool:
    """Remove rather than mark: nothing of the claim is in its source, or the lexical test failed
    and the judge, asked separately, also said no (two independent signals agree)."""
    if not claim.lexical or claim.supported is not False:
        return False
    if claim.judged is False:
        return True
    return claim.score < SURE_UNSUPPORTED and terms >= _MIN_TERMS_TO_REMOVE


# ---------------------------------------------------------------- the check


def citation_targets(markdown: str, sources: Sequence[SourceRef]) -> dict[int, SourceRef]:
    """What each [n] of `markdown` points to: its references list if it has one, else the registry numbers."""
    by_number = {s.number: s for s in sources}
    match = _REF_HEADING.search(markdown)
    if not match:
        return by_number
    by_url = {norm_url(s.url): s for s in sources if s.url}
    by_title = {s.title.strip(): s for s in sources}
    mapping: dict[int, SourceRef] = {}
    for line in markdown[match.end() :].splitlines():
        ref = _REF_LINE.match(line)
        if not ref:
            continue
        number, url, title = int(ref.group(1)), ref.group(3), ref.group(4)
        found = by_url.get(norm_url(url)) if url else by_title.get((title or "").strip())
        if found is not None:
            mapping[number] = found
    return mapping


def _clean_links(text: str, known_urls: set[str]) -> tuple[str, int]:
    removed = 0

    def link(m: textre.Match) -> str:
        nonlocal removed
        image, label, url = m.group(1), m.group(2), m.group(3)
        if not url.startswith(("http://", "https://", "www.", "//")):
            return m.group(0)  # figures/…, #anchors: local
        if norm_url(url) in known_urls:
            return m.group(0)
        removed += 1
        return "" if image else label + _LOST

    def auto(m: textre.Match) -> str:
        nonlocal removed
        if norm_url(m.group(1)) in known_urls:
            return m.group(0)
        removed += 1
        return _GONE

    text = _LINK.sub(link, text)
    text = _AUTOLINK.sub(auto, text)
    # Bare URLs: protect the links kept above, then drop unknown addresses.
    kept: list[str] = []

    def stash(m: textre.Match) -> str:
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"

    text = _LINK.sub(stash, text)
    text = _AUTOLINK.sub(stash, text)

    def bare(m: textre.Match) -> str:
        nonlocal removed
        url = m.group(2).rstrip(".,;:")
        if norm_url(url) in known_urls:
            return m.group(0)
        removed += 1
        return m.group(1) + _GONE + m.group(2)[len(url) :]

    text = _BARE_URL.sub(bare, text)
    text = textre.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)
    text = textre.sub(r"\(\s*\x01?\s*\)|（\s*\x01?\s*）", "", text)  # "( )" leftovers of a removed address
    return textre.sub(r"[ \t]{2,}", " ", text), removed


def _dangling(sentence: str) -> bool:
    """A short pointer whose address was removed ("More at <url>.", "详见 <url>。"): nothing is left to say."""
    if not textre.search(r"\x01[\s.。:：;；!?！？)）\]*]*$", sentence):
        return False
    rest = plain_text(sentence.replace(_GONE, "").replace(_LOST, ""))
    return len(rest.split()) <= 5 and len(_CJK.findall(rest)) <= 8


def _tidy(line: str) -> str:
    """No space before punctuation left behind by a removed citation or address ("unverified .")."""

    def drop(m: textre.Match) -> str:
        start, end = m.start(), m.end()
        after = line[end + 1 : end + 2]
        if start and not line[start - 1].isspace() and line[end : end + 1] in _LONE_MARKS and line[end : end + 1]:
            if not after or after.isspace():
                return ""
        return m.group(0)

    return _BLANKS.sub(drop, line)


def report_check(
    markdown: str,
    sources: Sequence[SourceRef],
    *,
    locale: str = "en-US",
    judge: Judge | None = None,
    remove_sure: bool = True,
    evidence: Sequence[str] = (),
) -> CheckResult:
    """Check and clean a report against the job's source registry (see the module doc).

    `remove_sure=False` (user edits) marks what a generated report would lose. `evidence` is
    text the job computed itself (processing steps' output): an uncited sentence found there
    stands without a citation.
    """
    markdown = markdown.replace("\r\n", "\n")
    mapping = citation_targets(markdown, sources)
    known_urls = {norm_url(s.url) for s in sources if s.url}
    zh = is_chinese(locale)
    marker = _MARKER_ZH if zh else _MARKER_EN
    result = CheckResult(markdown="")
    order: list[int] = []  # registry numbers in order of first use

    body = report_body(markdown).rstrip()
    parts = _FENCE.split(body)
    for index, part in enumerate(parts):
        if index % 2:
            continue
        part, removed_links = _clean_links(part, known_urls)
        result.removed_links += removed_links
        lines_out: list[str] = []
        for line in part.split("\n"):
            if line.lstrip().startswith("#"):
                lines_out.append(line.replace(_GONE, "").replace(_LOST, ""))
                continue
            uncited = _UncitedCheck(sources, evidence, judge, remove_sure, not _claim_line(line))
            pieces: list[str] = []
            for start, end in line_sentences(line):
                if _dangling(line[start:end]):
                    continue
                raw = line[start:end]
                lost = _GONE in raw or _LOST in raw
                sentence = raw.replace(_GONE, "").replace(_LOST, "")
                pieces.append(
                    _check_sentence(sentence, mapping, result, order, marker, judge, remove_sure, uncited, lost)
                )
            new = _tidy("".join(pieces).replace(_GONE, "").replace(_LOST, ""))
            if new != line and not new[:1].isspace():
                new = new.lstrip()
            if line.strip() and not plain_text(new):
                continue  # the whole line was an unsupported claim (or a bullet left empty)
            lines_out.append(new.rstrip() if new.strip() else new)
        parts[index] = textre.sub(r"\n{3,}", "\n\n", "\n".join(lines_out))  # no gap where a paragraph went
    body = "".join(parts).rstrip() + "\n"

    # Renumber 1..n in order of first use.
    renumber = {old: new for new, old in enumerate(order, start=1)}
    segments = _FENCE.split(body)
    for index in range(0, len(segments), 2):
        segments[index] = _CITE.sub(
            lambda m: m.group(1) + "".join(f"[{renumber[n]}]" for n in citation_numbers(m.group(0)) if n in renumber),
            segments[index],
        )
    body = "".join(segments)
    note = _note(result, zh)
    if note:
        body += "\n" + note + "\n"
    by_number = {s.number: s for s in sources}
    if order:
        listed = [replace(by_number[n], number=renumber[n]) for n in order]
        body += "\n" + references_markdown(listed, locale)
    result.markdown = body
    result.cited = order
    return result


def _check_sentence(
    sentence: str,
    mapping: dict[int, SourceRef],
    result: CheckResult,
    order: list[int],
    marker: str,
    judge: Judge | None,
    remove_sure: bool,
    uncited: _UncitedCheck,
    lost: bool = False,
) -> str:
    registry: list[int] = []

    def repl(m: textre.Match) -> str:
        kept: list[str] = []
        for number in citation_numbers(m.group(0)):
            source = mapping.get(number)
            if source is None:
                result.removed_citations += 1
                continue
            registry.append(source.number)
            kept.append(f"[{source.number}]")
        return m.group(1) + "".join(kept) if kept else ""

    dropped = result.removed_citations
    cleaned = _CITE.sub(repl, sentence)
    lost = lost or result.removed_citations > dropped
    cleaned = textre.sub(r"[ \t]+([.。!?！？,，;；:]|$)", r"\1", cleaned) if cleaned != sentence else cleaned
    if not registry:
        return uncited.check(cleaned, lost, result, order, marker)
    registry = list(dict.fromkeys(registry))
    plain = plain_text(cleaned)
    by_number = {s.number: s for s in mapping.values()}
    claim = check_claim(plain, [by_number[n] for n in registry], judge)
    result.claims.append(claim)
    already_marked = any(m in sentence for m in _MARKERS)
    if claim.supported is False:
        if remove_sure and _sure_unsupported(claim, len(set(tokenize(plain)))):
            result.removed_claims += 1
            return ""
        result.flagged += 1
        if not already_marked:
            cleaned = _add_marker(cleaned, marker)
    for n in registry:
        if n not in order:
            order.append(n)
    return cleaned


def is_factual(sentence: str) -> bool:
    """A sentence that states something checkable: a number, a date, a named study or
    organisation, or a comparison. Such a sentence needs a source."""
    if sentence.rstrip().endswith(("?", "？")):
        return False  # a question asserts nothing
    return bool(
        _FACT_DIGIT.search(sentence)
        or _FACT_WORDS_EN.search(sentence)
        or _FACT_MONTHS.search(sentence)
        or _FACT_WORDS_ZH.search(sentence)
    )


def _claim_line(line: str) -> bool:
    """Lines whose uncited sentences are not claims of the report: notes in italics (the engine's
    and the check's own), images, table rows and HTML."""
    text = line.strip()
    if text[:2] in ("![", "<!") or text[:1] in ("|", "<"):
        return True
    if len(text) > 4 and text.startswith("**") and text.endswith("**") and "**" not in text[2:-2]:
        return True  # a bold label on a line of its own
    return len(text) > 2 and text[0] in "_*" and text[-1] == text[0] and text[:2] != "**"


def uncited_factual_sentences(markdown: str) -> list[str]:
    """Plain text of the body's sentences that state a fact (`is_factual`) and cite nothing."""
    out: list[str] = []
    for part_index, part in enumerate(_FENCE.split(report_body(markdown))):
        if part_index % 2:
            continue
        for line in part.splitlines():
            if line.lstrip().startswith("#") or _claim_line(line):
                continue
            for start, end in line_sentences(line):
                sentence = line[start:end]
                plain = plain_text(sentence)
                if plain and not citation_numbers(sentence) and is_factual(plain):
                    out.append(plain)
    return out


def best_source(claim: str, sources: Sequence[SourceRef]) -> tuple[float, SourceRef | None, str]:
    """The source with the passage that best supports `claim`: (score, source, passage)."""
    best: tuple[float, SourceRef | None, str] = (0.0, None, "")
    for source in sources:
        if not source.text.strip():
            continue
        score, passage = _best_passage(claim, source)
        if score > best[0]:
            best = (score, source, passage)
    return best


class _UncitedCheck:
    """Uncited sentences of one line: a factual one, or one whose citation or link was removed as
    invented, is looked up in every source of the job (docs/quality.md, "Uncited claims")."""

    def __init__(
        self,
        sources: Sequence[SourceRef],
        evidence: Sequence[str],
        judge: Judge | None,
        remove_sure: bool,
        enabled: bool,
    ) -> None:
        self.sources = sources
        self.evidence = evidence
        self.judge = judge
        self.remove_sure = remove_sure
        self.enabled = enabled
        self._numbers: set[str] | None = None

    def check(self, sentence: str, lost: bool, result: CheckResult, order: list[int], marker: str) -> str:
        plain = plain_text(sentence)
        if not self.enabled or not plain or any(m in sentence for m in _MARKERS):
            return sentence
        if not lost and not is_factual(plain):
            return sentence
        if any(support_score(plain, text) >= SUPPORTED for text in self.evidence):
            return sentence  # the job's own computation says so
        result.uncited_checked += 1
        if not _numbers(plain) <= self._known_numbers():
            # A figure no source has anywhere ("a 2031 trial … 1,200 km"): in any script, nothing
            # supports it, so there is nothing to cite and nothing to ask a judge.
            return self._remove(result) if self.remove_sure else self._mark(sentence, result, marker)
        score, source, passage = best_source(plain, self.sources)
        if source is None:  # nothing in common (e.g. another script): the judge reads the first source
            source = next((s for s in self.sources if s.text.strip()), None)
            passage = source.text[:2000] if source else ""
        comparable = source is not None and _cjk(plain) == _cjk(source.text[:2000])
        supported: bool | None = score >= SUPPORTED if comparable else None
        if not supported and self.judge is not None and source is not None:
            verdict = self.judge(plain, passage or source.text[:2000])
            supported = verdict if verdict is not None else supported
            if verdict is False and self.remove_sure:
                return self._remove(result)  # uncited, and the judge finds it in no source
        if supported and source is not None:
            result.citations_added += 1
            if source.number not in order:
                order.append(source.number)
            return _append_citation(sentence, source.number)
        sure = comparable and score < SURE_UNCITED
        if sure and self.remove_sure:
            return self._remove(result)
        return self._mark(sentence, result, marker)

    def _known_numbers(self) -> set[str]:
        if self._numbers is None:
            self._numbers = set().union(*(_numbers(s.text) for s in self.sources), *map(_numbers, self.evidence))
        return self._numbers

    @staticmethod
    def _mark(sentence: str, result: CheckResult, marker: str) -> str:
        result.uncited_flagged += 1
        return sentence.rstrip() + marker + sentence[len(sentence.rstrip()) :]

    @staticmethod
    def _remove(result: CheckResult) -> str:
        result.uncited_removed += 1
        return ""


def _append_citation(sentence: str, number: int) -> str:
    body = sentence.rstrip()
    space = "" if body[-1:] in "。！？" else " "
    return f"{body}{space}[{number}]{sentence[len(body):]}"


def _add_marker(sentence: str, marker: str) -> str:
    """The marker right after the sentence's last citation: "… a year [1] *(unverified)*."."""
    ends = [m.end() for m in _CITE.finditer(sentence)]
    end = ends[-1] if ends else len(sentence.rstrip())
    return sentence[:end] + marker + sentence[end:]


def _note(result: CheckResult, zh: bool) -> str:
    parts: list[str] = []
    if zh:
        if result.flagged:
            parts.append(f"{result.flagged} 处引用的说法未能在所引来源中核实，已标注“未经核实”")
        if result.removed_claims:
            parts.append(f"删除了 {result.removed_claims} 处所引来源不支持的说法")
        if result.removed_links:
            parts.append(f"删除了 {result.removed_links} 个不是由检索工具返回的链接")
        if result.uncited_flagged:
            parts.append(f"{result.uncited_flagged} 处未注明出处的说法未能在来源中找到，已标注“未经核实”")
        if result.uncited_removed:
            parts.append(f"删除了 {result.uncited_removed} 处任何来源都不支持的未注明出处的说法")
        return f"_核查：{'；'.join(parts)}。_" if parts else ""
    if result.flagged:
        parts.append(
            f"{result.flagged} cited claim(s) could not be verified in the cited source and are marked (unverified)"
        )
    if result.removed_claims:
        parts.append(f"{result.removed_claims} claim(s) that the cited source does not support were removed")
    if result.removed_links:
        parts.append(f"{result.removed_links} link(s) to pages that no tool returned were removed")
    if result.uncited_flagged:
        parts.append(f"{result.uncited_flagged} uncited claim(s) could not be found in the sources and are marked "
                     "(unverified)")
    if result.uncited_removed:
        parts.append(f"{result.uncited_removed} uncited claim(s) that no source supports were removed")
    return f"_Verification: {'; '.join(parts)}._" if parts else ""
