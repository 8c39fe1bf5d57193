"""Scoring a claim against its sources: the lexical test, the optional judge, what counts as a fact.

The score is lexical (research.ir's tokenizer: stemmed English words, CJK bigrams): the share of
a sentence's terms, and all of its numbers, found in the best passage (a window of a few
sentences) of a source. A sentence in another script than its source (a Chinese report over
English pages) cannot be scored that way; it counts as unchecked unless a `judge` (e.g. a model)
is given. research.report.check applies this to every sentence of a report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from pydantic import BaseModel

from research import scripts, textre
from research.agents import subject as subjects
from research.agents.types import ChatModel, SourceRef
from research.ir import tokenize
from research.report.citations import CITATION
from research.report.links import url_key
from research.report.markdown import identifier_join, parser, unescaped
from research.report.sentences import MARKERS, line_sentences

# Thresholds on the share of a sentence's terms found in the cited passage.
SUPPORTED = 0.6  # at or above: supported (and every number of the sentence is in the passage)
SURE_UNSUPPORTED = 0.2  # below (with enough terms to judge): removed rather than marked
_MIN_TERMS_TO_REMOVE = 6
# An uncited claim scoring below this against every source (a missing number caps it at 0.3) is
# taken as not in the sources at all: removed from a generated report when no judge says otherwise.
SURE_UNCITED = 0.35
_WINDOW = 3  # sentences per passage

_NUMBER = textre.compile(r"\d+(?:[.,]\d+)*")
_CJK = textre.compile(f"[{scripts.HAN}]")
_LONE_MARKS = ".,;:!?。，；：！？"

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


def _capped_question(llm: ChatModel, prompt: str, locale: str, schema: type[BaseModel], field: str, *,
                     agent: str, max_calls: int) -> Callable[[str], bool | None]:
    """Ask the model one yes/no question (the user message) under the prompt `prompt`, at most `max_calls`
    times; a failed or unusable answer, or one past the cap, is None ("cannot tell")."""
    from research.agents.prompts import load_prompt

    system = load_prompt(prompt, locale)
    calls = 0

    def ask(content: str) -> bool | None:
        nonlocal calls
        if calls >= max_calls:
            return None
        calls += 1
        messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
        try:
            return bool(getattr(llm.structured(messages, schema, agent=agent, max_attempts=1, max_tokens=50), field))
        except Exception as exc:  # the model is an optional second opinion: any failure means "cannot tell"
            logger.info("%s judge unavailable (%s)", agent, exc)
            return None

    return ask


def model_judge(llm: ChatModel, locale: str, *, max_calls: int = 20) -> Judge:
    """A judge backed by the model (an LLMClient): asked only for claims the lexical test could not
    pass or could not score, at most `max_calls` times per report. A failed or unusable answer is
    "cannot tell", so the lexical verdict stands."""
    ask = _capped_question(llm, "verifier", locale, Verdict, "supported", agent="verifier", max_calls=max_calls)
    return lambda claim, passage: ask(f"## Claim\n{claim}\n\n## Passage\n{passage[:3000]}")


class Relevance(BaseModel):
    about: bool


# (question, sentence, passage) -> True (about the question's subject), False (about another) or None.
RelevanceJudge = Callable[[str, str, str], "bool | None"]


def model_relevance_judge(llm: ChatModel, locale: str, *, max_calls: int = 10) -> RelevanceJudge:
    """A second opinion from the model on cited sentences the subject model found to be about another
    subject (research.agents.subject.claim_about), at most `max_calls` per report; a failed or unusable
    answer is "cannot tell", so the lexical verdict stands."""
    ask = _capped_question(llm, "relevance", locale, Relevance, "about", agent="relevance", max_calls=max_calls)
    return lambda question, claim, passage: ask(
        f"## Question\n{question}\n\n## Sentence\n{claim}\n\n## Passage\n{passage[:3000]}")


@dataclass(frozen=True)
class Claim:
    text: str  # the sentence, citation markers and Markdown removed
    sources: tuple[int, ...]  # registry numbers it cites
    score: float  # best share of its terms found in a cited passage (0..1)
    supported: bool | None  # None: not checkable lexically (other script) and no judge
    passage: str = ""  # the best-matching passage
    lexical: bool = True  # claim and source share a script, so the score means something
    judged: bool | None = None  # the judge's verdict, when one was asked
    about: bool | None = None  # about the job's question's subject (research.agents.subject); None: not judged
    about_why: str = ""


def norm_url(url: str) -> str:
    """One spelling per address (research.report.links.url_key)."""
    return url_key(url)


def _cjk(text: str) -> bool:
    return len(_CJK.findall(text)) >= 4


def _link_texts(text: str) -> str:
    """Links, images and autolinks of one piece of inline Markdown replaced by their text (markdown-it's reading)."""
    if "](" not in text and "<" not in text:
        return text  # without a destination or an autolink there is no link to read (no definitions here)
    out: list[str] = []
    last = 0
    for token in parser().parseInline(text)[0].children or []:
        span = (token.meta or {}).get("span")
        if span is None or token.type == "code_inline" or span[0] < last:
            continue
        label = token.meta.get("label")
        out.append(text[last : span[0]])
        out.append(text[label[0] : label[1]] if label else text[span[0] + 1 : span[1] - 1])
        last = span[1]
    out.append(text[last:])
    return "".join(out)


def plain_text(text: str) -> str:
    text = _link_texts(text)
    text = CITATION.sub(" ", text)
    for marker in MARKERS:
        text = text.replace(marker, "")
    text = textre.sub(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+", "", text)
    text = textre.sub(r"^\s*\*\*[^*\n]{1,80}\*\*\s*[:：]\s*", "", text)  # "**Facet**: quote": the label is no claim
    # As a reader sees it: escapes resolved, emphasis and code marks gone, an identifier's underscores kept
    # (RESTIC_PASSWORD_FILE, set_broker), so a quote and its source read alike and a fact can be found in it.
    text = unescaped(text)
    text = "".join(ch for i, ch in enumerate(text) if ch not in "*`>#_" or identifier_join(text, i))
    words: list[str] = []
    for word in text.split():  # "a year [1]." -> "a year.": a lone mark is glued to the word before it
        if words and len(word) == 1 and word in _LONE_MARKS:
            words[-1] += word
        else:
            words.append(word)
    return " ".join(words)


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


@dataclass(frozen=True)
class RelevanceCheck:
    """The job's subject (research.agents.subject) and, optionally, the model as a second opinion."""

    subject: subjects.Subject
    judge: RelevanceJudge | None = None

    def verdict(self, claim: Claim, cited: Sequence[SourceRef]) -> Claim:
        """The claim with its relevance verdict against the cited pages in the question's script; a claim or
        pages in another script cannot be compared word for word (None). The model, when given, may clear
        a sentence the lexical verdict found off the subject; its "no" or no answer leaves the verdict."""
        subject = self.subject
        pages = [(s.title, s.text) for s in cited if subjects.comparable(subject, s.text)]
        if not subject.specific or not pages or not scripts.same_script(claim.text, subject.locale):
            return claim
        verdict = subjects.claim_about(subject, claim.text, pages, claim.passage)
        if not verdict.about and self.judge is not None:
            if self.judge(subject.question, claim.text, claim.passage or pages[0][1][:2000]):
                return replace(claim, about=True, about_why="the model judged it about the question's subject")
        return replace(claim, about=verdict.about, about_why=verdict.why)
