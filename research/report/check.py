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
  numbering has no gaps;
- given the job's `question`, judges each cited sentence's relevance: a sentence that is about
  another subject than the question's, in its cited page's context (research.agents.subject.claim_about:
  the surgery's side effects cited for a question on GLP-1 drugs), is counted (`off_subject`) and named
  in the check's note and the report's check line, whatever its support score.

The score is lexical (research.ir's tokenizer: stemmed English words, CJK bigrams). A sentence in
another script than its source (a Chinese report over English pages) cannot be scored that way;
it counts as unchecked unless a `judge` (e.g. a model) is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from research import scripts, textre
from research.agents import subject as subjects
from research.agents.text import is_chinese
from research.agents.types import SourceRef
from research.ir import tokenize
from research.report.body import GONE, protected_parts, restore_code
from research.report.citations import (
    CITATION,
    DROPPED_MARK,
    find_citation_markers,
    references_markdown,
)
from research.report.claims import (
    SUPPORTED,
    SURE_UNCITED,
    Claim,
    Judge,
    RelevanceCheck,
    RelevanceJudge,
    _cjk,
    _numbers,
    _sure_unsupported,
    best_source,
    check_claim,
    is_factual,
    model_judge,
    model_relevance_judge,
    norm_url,
    plain_text,
    support_score,
)
from research.report.links import LinkPolicy, unlink
from research.report.markdown import normalized
from research.report.references import Entry, references_entries, strip_references
from research.report.sentences import MARKER_EN, MARKER_ZH, MARKERS, line_sentences

__all__ = [
    "SUPPORTED",
    "CheckResult",
    "Claim",
    "ReportTooLarge",
    "best_source",
    "model_judge",
    "model_relevance_judge",
    "restore_code",
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

_LONE_MARKS = ".,;:!?。，；：！？"
_BLANKS = textre.compile(r"[ \t]+")
_MARKER_EN, _MARKER_ZH, _MARKERS = MARKER_EN, MARKER_ZH, MARKERS
_GONE = GONE  # where a removed address stood, until the sentence around it is judged
_LOST = DROPPED_MARK  # after an inline link whose address was removed, or where finalize_report cut a citation

logger = logging.getLogger(__name__)








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
    off_subject: int = 0  # cited sentences about another subject than the question's

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
            "off_subject": self.off_subject,
        }


# ---------------------------------------------------------------- text helpers








class ReportTooLarge(ValueError):
    """The checked report would be over the size budget its input had to meet."""

    def __init__(self, size: int, limit: int, marked: int) -> None:
        super().__init__(f"checked report of {size} characters over the {limit} budget ({marked} sentences marked)")
        self.size, self.limit, self.marked = size, limit, marked


def _sentences_of(markdown: str, *, skip_line: Callable[[str], bool] | None = None) -> list[str]:
    """Each sentence of the body outside code, inline code left out, headings, references and the lines
    `skip_line` names skipped."""
    parts, _codes, _ = protected_parts(report_body(markdown))
    out: list[str] = []
    for part, is_code in parts:
        if is_code:
            continue
        for line in part.splitlines():
            if line.lstrip().startswith("#") or (skip_line is not None and skip_line(line)):
                continue
            out.extend(line[start:end] for start, end in line_sentences(line))
    return out


def cited_sentences(markdown: str) -> list[tuple[str, tuple[int, ...]]]:
    """(plain sentence, cited numbers) for each sentence of the body that carries a citation."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for sentence in _sentences_of(markdown):
        numbers = tuple(_cited(sentence))
        if numbers:
            out.append((plain_text(restore_code(sentence, [])), numbers))
    return out


def report_body(markdown: str) -> str:
    """The report without the references lists (research.report.references); prose under their heading stays."""
    return strip_references(markdown)


# ---------------------------------------------------------------- the check


def citation_targets(
    markdown: str, sources: Sequence[SourceRef], *, seen: Sequence[Entry] | None = None
) -> dict[int, SourceRef]:
    """What each [n] of `markdown` points to: entry n of its references list.

    A report without a references list means the list its reader saw (`seen`: the version a user
    edited), so deleting the list never re-maps a citation; without one either (the model's own
    text), the registry numbers.
    """
    by_number = {s.number: s for s in sources}
    entries = references_entries(markdown)
    if entries is None:
        if seen is None:
            return by_number
        entries = list(seen)
    by_url = {norm_url(s.url): s for s in sources if s.url}
    by_title = {s.title.strip(): s for s in sources}
    mapping: dict[int, SourceRef] = {}
    for entry in entries:
        found = by_url.get(norm_url(entry.url)) if entry.url else by_title.get(entry.title.strip())
        if found is not None:
            mapping.setdefault(entry.number, found)
    return mapping




def _dangling(sentence: str) -> bool:
    """A short pointer whose address was removed ("More at <url>.", "详见 <url>。"): nothing is left to say."""
    if not textre.search(r"\x01[\s.。:：;；!?！？)）\]*]*$", sentence):
        return False
    rest = plain_text(sentence.replace(_GONE, "").replace(_LOST, ""))
    return len(rest.split()) <= 5 and scripts.count_han(rest) <= 8


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
    seen: Sequence[Entry] | None = None,
    max_chars: int | None = None,
    question: str = "",
    relevance_judge: RelevanceJudge | None = None,
) -> CheckResult:
    """Check and clean a report against the job's source registry (see the module doc).

    `remove_sure=False` (user edits) marks what a generated report would lose. `evidence` is
    text the job computed itself (processing steps' output): an uncited sentence found there
    stands without a citation. `seen` is the references list the editor saw (citation_targets).
    `max_chars`: the checked report must fit the same budget as its input (ReportTooLarge).
    `question`: the job's question, whose subject each cited sentence must be about (`off_subject`);
    `relevance_judge` (the model) is asked about the sentences the subject model finds off the subject.
    """
    markdown = normalized(markdown)
    mapping = citation_targets(markdown, sources, seen=seen)
    policy = LinkPolicy.of(s.url for s in sources)
    known_urls = {norm_url(s.url) for s in sources if s.url}
    zh = is_chinese(locale)
    marker = _MARKER_ZH if zh else _MARKER_EN
    result = CheckResult(markdown="")
    order: list[int] = []  # registry numbers in order of first use
    subject: RelevanceCheck | None = None
    if question.strip():  # the near-miss pages among the job's sources name the competing subjects
        model = subjects.with_competitors(subjects.subject_of(question, locale), [(s.title, s.text) for s in sources])
        subject = RelevanceCheck(model, relevance_judge)

    body, earlier = _without_note(report_body(markdown))
    unlinked = unlink(body.rstrip(), policy, lost=_LOST, gone=_GONE)
    parts, codes, bare_removed = protected_parts(unlinked.markdown, known_urls)
    result.removed_links += unlinked.removed + bare_removed
    for index, (part, is_code) in enumerate(parts):
        if not is_code:
            parts[index] = (_check_part(part, mapping, sources, evidence, judge, remove_sure, result, order, marker,
                                        subject), False)

    # A citation on a line the check dropped cites nothing: only those left in the text are listed.
    present = {n for part, is_code in parts if not is_code for m in find_citation_markers(part) for n in m.numbers}
    order[:] = [n for n in order if n in present]
    # Renumber 1..n in order of first use (code, hidden or set aside, is never touched).
    renumber = {old: new for new, old in enumerate(order, start=1)}
    body = "".join(
        part if is_code else CITATION.sub(
            lambda m: m.group(1) + "".join(f"[{renumber[n]}]" for n in _cited(m.group(0)) if n in renumber),
            part,
        )
        for part, is_code in parts
    )
    body = restore_code(body, codes).rstrip() + "\n"
    note = _note(result, zh) or earlier  # checked again with nothing new to say: the earlier note stands
    if note:
        body += "\n" + note + "\n"
    by_number = {s.number: s for s in sources}
    if order:
        listed = [replace(by_number[n], number=renumber[n]) for n in order]
        body += "\n" + references_markdown(listed, locale)
    if max_chars is not None and len(body) > max_chars:
        raise ReportTooLarge(len(body), max_chars, result.flagged + result.uncited_flagged)
    result.markdown = body
    result.cited = order
    return result


def _check_part(
    part: str,
    mapping: dict[int, SourceRef],
    sources: Sequence[SourceRef],
    evidence: Sequence[str],
    judge: Judge | None,
    remove_sure: bool,
    result: CheckResult,
    order: list[int],
    marker: str,
    subject: RelevanceCheck | None = None,
) -> str:
    """One stretch of the report between code blocks, line by line; a line the check leaves alone is kept as is."""
    part = textre.sub(r"\(\s*\x01?\s*\)|（\s*\x01?\s*）", "", part)  # "( )" leftovers of a removed address
    lines_out: list[str] = []
    dropped = False
    for line in part.split("\n"):
        if line.lstrip().startswith("#"):
            lines_out.append(_unmark(line))
            continue
        uncited = _UncitedCheck(sources, evidence, judge, remove_sure, not _claim_line(line))
        pieces: list[str] = []
        for start, end in line_sentences(line):
            if _dangling(line[start:end]):
                continue
            raw = line[start:end]
            lost = _GONE in raw or _LOST in raw
            sentence = _unmark(raw)
            pieces.append(_check_sentence(sentence, mapping, result, order, marker, judge, remove_sure, uncited, lost,
                                          subject))
        joined = "".join(pieces)
        new = line if joined == line else _tidy(joined)
        if new != line:
            trail = line[len(line.rstrip()) :]  # a hard break ("  ") stays
            new = (new if new[:1].isspace() else new.lstrip()).rstrip() + trail
        if line.strip() and new != line and not plain_text(restore_code(new, [])):
            dropped = True
            continue  # the whole line was an unsupported claim (or a bullet left empty)
        if dropped and not new.strip() and (not lines_out or not lines_out[-1].strip()):
            continue  # no gap where a paragraph went
        dropped = False
        lines_out.append(new)
    return "\n".join(lines_out)


def _without_note(body: str) -> tuple[str, str]:
    """The body without an earlier check's note (`_note`), and that note: a report checked again gets one note."""
    if "_Verification: " not in body and "_核查：" not in body:
        return body, ""
    notes = [line for line in body.split("\n")
             if line.startswith(("_Verification: ", "_核查：")) and line.endswith(("._", "。_"))]
    kept = [line for line in body.split("\n") if line not in notes]
    return "\n".join(kept), notes[-1] if notes else ""


def _cited(text: str) -> list[int]:
    """Citation numbers of code-free text (code is hidden or set aside here), in order, each once."""
    return list(dict.fromkeys(n for marker in find_citation_markers(text) for n in marker.numbers))


def _unmark(text: str) -> str:
    """The text without the link marks: a removed address takes the blanks before it along."""
    return textre.sub(r"[ \t]*\x01", "", text).replace(_LOST, "")


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
    subject: RelevanceCheck | None = None,
) -> str:
    registry: list[int] = []

    def repl(m: textre.Match) -> str:
        kept: list[str] = []
        for number in _cited(m.group(0)):
            source = mapping.get(number)
            if source is None:
                result.removed_citations += 1
                continue
            registry.append(source.number)
            kept.append(f"[{source.number}]")
        return m.group(1) + "".join(kept) if kept else ""

    dropped = result.removed_citations
    cleaned = CITATION.sub(repl, sentence)
    lost = lost or result.removed_citations > dropped
    cleaned = textre.sub(r"[ \t]+([.。!?！？,，;；:]|$)", r"\1", cleaned) if cleaned != sentence else cleaned
    if not registry:
        return uncited.check(cleaned, lost, result, order, marker)
    registry = list(dict.fromkeys(registry))
    plain = plain_text(cleaned)
    by_number = {s.number: s for s in mapping.values()}
    cited = [by_number[n] for n in registry]
    claim = check_claim(plain, cited, judge)
    if subject is not None:
        claim = subject.verdict(claim, cited)
        result.off_subject += claim.about is False
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
    for sentence in _sentences_of(markdown, skip_line=_claim_line):
        plain = plain_text(restore_code(sentence, []))
        if plain and not _cited(sentence) and is_factual(plain):
            out.append(plain)
    return out


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
        if not tokenize(plain):
            # No word to look up (":b.:", left where a link was removed): nothing to cite, and a citation added
            # here would fail the cited-claim check the next time the report is checked.
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
    ends = [m.end() for m in CITATION.finditer(sentence)]
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
        if result.off_subject:
            parts.append(f"{result.off_subject} 处引用的句子谈的是另一主题，而非所问的主题")
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
    if result.off_subject:
        parts.append(f"{result.off_subject} cited sentence(s) are about another subject than the question's")
    return f"_Verification: {'; '.join(parts)}._" if parts else ""
