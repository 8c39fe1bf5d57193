"""Report quality metrics for `make eval`: pure functions over a report, its sources and a question.

- fact_recall: share of the question's key facts stated in one sentence of the report that cites
  a page stating that fact (a fact is groups of keywords, each group a set of synonyms, numbers
  with their units; every group must occur in the sentence). The same words in a sentence quoted
  from a distractor page, or in an uncited sentence, do not count;
- citation_support: share of cited sentences whose cited source has a passage that supports them
  (research.report.check's lexical score, the same test the claim check applies); sentences in
  another script than their source cannot be scored that way and are counted apart;
- unretrieved_urls: http(s) addresses in the report that are not among the job's sources;
- uncited_unsupported: sentences that state a fact (a number, a date, a named study or
  organisation, a comparison: verify.is_factual), cite nothing, and are not found in any source
  (or are marked unverified);
- answer_first: the opening answer under the first heading (its quotes up to the second part's bold
  label, or the next heading) is prose (not a list) that states a key fact, with a citation;
- near_miss_cited: share of cited sentences that cite one of the question's `near_miss` pages (pages
  with the question's words and figures of the kind it asks for, about another subject);
- off_subject_cited: share of cited sentences that cite any source that is neither one of the
  question's `pages` nor one of its `distractors` (near-miss pages and pages of other questions).
  A sentence citing a relevant page and a near-miss page at once counts: it still leans on the
  wrong subject.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from markdown_it.token import Token

from research.agents.types import SourceRef
from research.report import check as verify
from research.report.citations import citation_numbers
from research.report.markdown import parser

_URL = re.compile(r"https?://[^\s<>()\[\]\"']+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s")


@dataclass
class Scores:
    facts: list[bool] = field(default_factory=list)
    claims: int = 0
    supported: int = 0
    unchecked: int = 0  # cited sentences in another script than their source
    unretrieved_urls: list[str] = field(default_factory=list)
    uncited_unsupported: list[str] = field(default_factory=list)
    answer_first: bool = False
    near_miss: int = 0  # cited sentences citing a near-miss page of the question
    off_subject: int = 0  # cited sentences citing a page outside the question's pages and distractors

    @property
    def fact_recall(self) -> float:
        return sum(self.facts) / len(self.facts) if self.facts else 0.0

    @property
    def citation_support(self) -> float | None:
        checked = self.claims - self.unchecked
        return self.supported / checked if checked else None

    @property
    def near_miss_cited(self) -> float:
        return self.near_miss / self.claims if self.claims else 0.0

    @property
    def off_subject_cited(self) -> float:
        return self.off_subject / self.claims if self.claims else 0.0

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
            "uncited_unsupported": len(self.uncited_unsupported),
            "answer_first": self.answer_first,
            "near_miss_cited": round(self.near_miss_cited, 3),
            "near_miss_cited_count": self.near_miss,
            "off_subject_cited": round(self.off_subject_cited, 3),
            "off_subject_cited_count": self.off_subject,
        }


def fold(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold().replace("‑", "-"))


def page_name(url: str) -> str:
    """The corpus page a URL points to (`/pages/<name>.html`), or ''."""
    path = urlsplit(url).path
    if path.startswith("/pages/") and path.endswith(".html"):
        return path[len("/pages/") : -len(".html")]
    return ""


def states_fact(fact: dict[str, Any], sentence: str) -> bool:
    """Every keyword group of the fact (any of its synonyms) occurs in the (folded) sentence."""
    return all(any(fold(word) in sentence for word in group) for group in fact["all"])


def report_sentences(
    markdown: str, sources: list[SourceRef], *, part: str | None = None
) -> list[tuple[str, set[str]]]:
    """(folded plain sentence, names of the corpus pages it cites) for each sentence of the body
    (or of `part` of it, its citations read through the whole report's references)."""
    mapping = verify.citation_targets(markdown, sources)
    out: list[tuple[str, set[str]]] = []
    for line in (verify.report_body(markdown) if part is None else part).splitlines():
        for start, end in verify.line_sentences(line):
            sentence = line[start:end]
            pages = {page_name(mapping[n].url) for n in citation_numbers(sentence) if n in mapping}
            out.append((fold(verify.plain_text(sentence)), pages - {""}))
    return out


def fact_found(fact: dict[str, Any], sentences: list[tuple[str, set[str]]]) -> bool:
    wanted = set(fact["pages"])
    return any(pages & wanted and states_fact(fact, text) for text, pages in sentences)


def _wrapped(paragraph: Token, inline: Token, mark: str) -> bool:
    """The paragraph is one span of `mark` (strong, em) on one line: a part's bold label, a note in italics."""
    kids = inline.children or []
    return (bool(kids) and kids[0].type == f"{mark}_open" and kids[-1].type == f"{mark}_close"
            and sum(k.type == f"{mark}_open" for k in kids) == 1 and paragraph.map is not None
            and paragraph.map[1] - paragraph.map[0] == 1)


def first_paragraph(markdown: str) -> str:
    """The opening answer under the first `##` heading: its first part, notes in italics skipped. An
    answer puts each quote in a paragraph of its own and, for a question in parts, each part's bold label
    ("**What does it cost?**") on a line of its own: the opening is the blocks after the first label up to
    the next label or heading (for an answer without labels, up to the next heading). Read on markdown-it's
    block tokens, the parser the report is rendered with."""
    body = verify.report_body(markdown)
    lines = body.split("\n")
    tokens = parser().parse(body)
    h2 = next((i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"), None)
    after = next(i for i in range(h2, len(tokens)) if tokens[i].type == "heading_close") + 1 if h2 is not None else 0
    blocks: list[str] = []
    for i in range(after, len(tokens)):
        token = tokens[i]
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue  # inside a block, or a block's end
        if token.type == "heading_open":
            break
        if token.type == "paragraph_open" and _wrapped(token, tokens[i + 1], "strong"):
            if blocks:
                break
            continue
        if token.type == "paragraph_open" and _wrapped(token, tokens[i + 1], "em"):
            continue
        blocks.append("\n".join(lines[token.map[0] : token.map[1]]).strip())
    return "\n".join(block for block in blocks if block)


def score_report(markdown: str, sources: list[SourceRef], question: dict[str, Any]) -> Scores:
    scores = Scores()
    sentences = report_sentences(markdown, sources)
    scores.facts = [fact_found(f, sentences) for f in question["facts"]]
    mapping = verify.citation_targets(markdown, sources)
    near_miss = set(question.get("near_miss", ()))
    on_subject = set(question["pages"]) | set(question["distractors"])
    for sentence, numbers in verify.cited_sentences(markdown):
        cited = [mapping[n] for n in numbers if n in mapping]
        scores.claims += 1
        if not cited:
            continue
        names = {page_name(s.url) for s in cited}
        scores.near_miss += bool(names & near_miss)
        scores.off_subject += bool(names - on_subject)
        claim = verify.check_claim(sentence, cited)
        if claim.supported is None:
            scores.unchecked += 1
        elif claim.supported and "unverified" not in sentence and "未经核实" not in sentence:
            scores.supported += 1
    known = {verify.norm_url(s.url) for s in sources if s.url}
    scores.unretrieved_urls = [u for u in _URL.findall(markdown) if verify.norm_url(u.rstrip(".,;:")) not in known]
    for sentence in verify.uncited_factual_sentences(markdown):
        score, source, _ = verify.best_source(sentence, sources)
        marked = "unverified" in sentence or "未经核实" in sentence
        if marked or source is None or score < verify.SUPPORTED:
            scores.uncited_unsupported.append(sentence)
    first = first_paragraph(markdown)
    if first and not _LIST_ITEM.match(first):
        lead = report_sentences(markdown, sources, part=first)
        scores.answer_first = any(fact_found(f, lead) for f in question["facts"])
    return scores
