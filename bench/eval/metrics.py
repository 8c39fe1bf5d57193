"""Report quality metrics for `make eval`: pure functions over a report, its sources and a question.

- fact_recall: share of the question's key facts stated in one sentence of the report (a fact is
  a list of acceptable phrasings, each a set of keywords that must all occur in that sentence);
- citation_support: share of cited sentences whose cited source has a passage that supports them
  (research.agents.verify's lexical score, the same test the model path's verifier applies);
  sentences in another script than their source cannot be scored that way and are counted apart;
- unretrieved_urls: http(s) addresses in the report that are not among the job's sources;
- answer_first: the first paragraph under the first heading states a key fact, with a citation.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from research.agents import verify
from research.agents.types import SourceRef

_URL = re.compile(r"https?://[^\s<>()\[\]\"']+")
_CITE = re.compile(r"\[\d{1,4}(?:\s*[,，]\s*\d{1,4})*\]")


@dataclass
class Scores:
    facts: list[bool] = field(default_factory=list)
    claims: int = 0
    supported: int = 0
    unchecked: int = 0  # cited sentences in another script than their source
    unretrieved_urls: list[str] = field(default_factory=list)
    answer_first: bool = False

    @property
    def fact_recall(self) -> float:
        return sum(self.facts) / len(self.facts) if self.facts else 0.0

    @property
    def citation_support(self) -> float | None:
        checked = self.claims - self.unchecked
        return self.supported / checked if checked else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "fact_recall": round(self.fact_recall, 3),
            "facts_found": sum(self.facts),
            "facts": len(self.facts),
            "citation_support": None if self.citation_support is None else round(self.citation_support, 3),
            "cited_sentences": self.claims,
            "supported": self.supported,
            "unchecked": self.unchecked,
            "unretrieved_urls": len(self.unretrieved_urls),
            "answer_first": self.answer_first,
        }


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold().replace("‑", "-"))


def report_sentences(markdown: str) -> list[str]:
    body = verify.report_body(markdown)
    out: list[str] = []
    for line in body.splitlines():
        for start, end in verify.line_sentences(line):
            out.append(_fold(verify.plain_text(line[start:end])))
    return out


def fact_found(fact: dict[str, Any], sentences: list[str]) -> bool:
    phrasings = [[_fold(k) for k in alternative] for alternative in fact["match"]]
    return any(all(k in s for k in keys) for s in sentences for keys in phrasings)


def _first_paragraph(markdown: str) -> str:
    """The first paragraph (or list) under the first `##` heading, notes in italics skipped."""
    body = verify.report_body(markdown)
    match = re.search(r"^##\s+.*$", body, re.M)
    rest = body[match.end() :] if match else body
    for block in re.split(r"\n\s*\n", rest):
        block = block.strip()
        if not block or block.startswith("#"):
            if block.startswith("#"):
                break
            continue
        if re.fullmatch(r"_[^\n]*_", block):
            continue
        return block
    return ""


def score_report(markdown: str, sources: list[SourceRef], question: dict[str, Any]) -> Scores:
    scores = Scores()
    sentences = report_sentences(markdown)
    scores.facts = [fact_found(f, sentences) for f in question["facts"]]
    mapping = verify.citation_targets(markdown, sources)
    for sentence, numbers in verify.cited_sentences(markdown):
        cited = [mapping[n] for n in numbers if n in mapping]
        scores.claims += 1
        if not cited:
            continue
        claim = verify.check_claim(sentence, cited)
        if claim.supported is None:
            scores.unchecked += 1
        elif claim.supported and "unverified" not in sentence and "未经核实" not in sentence:
            scores.supported += 1
    known = {verify.norm_url(s.url) for s in sources if s.url}
    scores.unretrieved_urls = [u for u in _URL.findall(markdown) if verify.norm_url(u.rstrip(".,;:")) not in known]
    first = _first_paragraph(markdown)
    scores.answer_first = bool(_CITE.search(first)) and any(
        fact_found(f, report_sentences(f"## x\n\n{first}")) for f in question["facts"]
    )
    return scores
