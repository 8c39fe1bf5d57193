"""Source selection for the offline engine: how much each fetched page is about the question's
subject, which pages get a sentence shown, and whether a sentence is on the subject
(docs/offline-engine.md, "Ranking")."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from research import scripts, textre
from research.agents.engines.offline.numbers import _numbers
from research.agents.rank import RankedSentence, tokenize
from research.agents.subject import (
    names_a_word,
    names_subject,
    page_about,
    sentence_about,
    subject_of,
    title_as_read,
    with_competitors,
)
from research.agents.text import is_chinese, key_terms
from research.agents.types import SourceRef
from research.agents.words import _function_word, _raw_words


def _figures_prior(sentence: str) -> float:
    """A "key figures" step wants sentences that quote numbers, and years alone are not figures."""
    return 2.0 if _numbers([sentence]) else 1.0


def _figures_bonus(sentence: str) -> float:
    """Every step prefers a sentence with a figure a little: it usually states something specific."""
    return 1.3 if _numbers([sentence]) else 1.0


def _shared_subject(question: str, locale: str, sources: Sequence[SourceRef], *, also: str = "") -> set[str]:
    """Tokens of the question's key terms that most fetched pages contain: the subject, which tells
    no sentence apart from another, unlike what the question asks about it ("limits", "cost"). `also`: more
    words of the question (their English, for English pages found for a Chinese question)."""
    if len(sources) < 2:
        return set()
    pages = [set(tokenize(f"{ref.title} {ref.text}")) for ref in sources]
    shared: set[str] = set()
    for term in [*key_terms(question, locale), also]:
        for token in tokenize(term):
            if sum(token in page for page in pages) >= 0.5 * len(pages):
                shared.add(token)
    return shared


_CJK_RUN = textre.compile(f"[{scripts.HAN_COMMON}]+")


def _same_script(locale: str, ref: SourceRef) -> bool:
    """The page is written in the question's script (Chinese or not)."""
    return scripts.same_script(ref.text[:3000], locale)


DOUBTFUL = 0.4  # the weight of a page the subject model neither keeps nor turns away (Verdict.firm)


class SourceWeights(dict[int, float]):
    """Source number -> weight, and `rejected`: the pages the subject model found to be about another
    subject (research.agents.subject.page_about). A caller may raise a weight (a search's first hits),
    never un-reject a page: `_cover_sources` drops their sentences whatever their weight has become."""

    def __init__(self) -> None:
        super().__init__()
        self.rejected: dict[int, str] = {}  # number -> why
        self.doubtful: dict[int, str] = {}  # number -> why: not shown to be about the subject, nor about another


def _zh_content_words(terms: Sequence[str]) -> list[str]:
    """The content words of Chinese key terms (jieba's, two characters or more, no grammar or stop words)."""
    return list(dict.fromkeys(w for t in terms if scripts.has_han(t) for w, lang in _raw_words(t)
                              if lang == "zh" and len(w) >= 2 and not _function_word(w, lang)))


def _source_weights(question: str, locale: str, sources: Sequence[SourceRef]) -> SourceWeights:
    """How much each fetched page is about the question's subject, as a factor on its sentences' scores.

    A page in the question's script is weighed by the share of the question's key terms it contains
    (a term counts when a third of its tokens occur): every page a search returns shares some words
    with the question, but a page on another subject lacks most of them. A page in another script
    cannot be compared word for word, so the search engine's order speaks for it. On top, a page that
    the subject model finds to be about another subject (a near miss: the question's general words,
    another drug, ecosystem or kind of railway) weighs 0 and is listed in `rejected`.
    """
    raw_terms = [t for t in key_terms(question, locale) if tokenize(t)]
    terms = [set(tokenize(t)) for t in raw_terms]
    # A long Chinese chunk ("抽水蓄能在中国面临") is its words run together, the subject first: a page
    # that has its first four characters verbatim ("抽水蓄能") has the term. (Only the first: a window
    # across two words, "电池量产", would match pages on other batteries.)
    heads = [[t[:4]] if len(t) >= 5 and _CJK_RUN.fullmatch(t) else [] for t in raw_terms]
    total = sum(len(t) for t in terms)
    content_words = _zh_content_words(raw_terms) if is_chinese(locale) else []
    content_total = sum(len(w) for w in content_words)
    weights = SourceWeights()
    foreign: list[int] = []
    soft: list[int] = []  # turned away with no evidence of another subject, naming part of this one
    subject = subject_of(question, locale)
    for ref in sources:
        if not _same_script(locale, ref) or not terms:
            foreign.append(ref.number)
            continue
        present = set(tokenize(f"{ref.title} {ref.text}"))
        # Long terms weigh more: "固态电池量产" says more about the subject than "限制".
        # A word or two must be there in full ("solid-state" is not "United States"), a long CJK term by half.
        page = f"{ref.title} {ref.text}"
        share = sum(
            len(t)
            for t, head in zip(terms, heads, strict=True)
            if (t <= present if len(t) <= 2 else 2 * len(t & present) >= len(t)) or any(h in page for h in head)
        ) / total
        # A colloquial Chinese run is mostly grammar (航班延误多久能拿到赔偿: 误多, 多久, 久能 …): its content words
        # (航班, 延误, 拿到, 赔偿) say better how much of the question a page the subject model accepts shares.
        # (Not for the doubt above: that gate stays as strict as it was.)
        shared = max(share, sum(len(w) for w in content_words if w in page) / content_total) if content_words else share
        verdict = page_about(subject, ref.title, ref.text)
        if not verdict.about and not verdict.firm and share >= 0.34 and names_a_word(subject, ref.title, ref.text):
            # No evidence it is about the subject, none that it is about another, and most of the question's
            # terms are there (it may name the subject otherwise: "herpes zoster" for shingles): read last,
            # never turned away. A page with few of them, or with none of the subject's own words (a page on
            # satellite navigation that shares 事故 and 预防 with a question on 疲劳驾驶), is on another topic.
            weights[ref.number] = DOUBTFUL
            weights.doubtful[ref.number] = verdict.why
            continue
        if not verdict.about:
            weights[ref.number] = 0.0
            weights.rejected[ref.number] = verdict.why
            if not verdict.firm and names_subject(subject, f"{ref.title}\n{ref.text}"):
                soft.append(ref.number)  # names a term of the subject (猝死), not its whole (马拉松比赛中猝死)
            continue
        if subject.specific:
            # The subject model found the page about the question's specific subject: the share of the
            # question's other words only orders such pages ("公共充电桩利用率偏低" answers a question on
            # 中国电动汽车充电桩 without repeating 中国 or 电动汽车).
            weights[ref.number] = 0.6 + 0.4 * shared
        else:
            weights[ref.number] = 0.05 if shared < 0.34 else 0.7 + 0.3 * shared
    if soft and len(weights.rejected) == len(weights):
        # Not one page shown to be on the subject, none doubtful: the pages turned away only for want of
        # evidence that name a term of it (猝死 on a page that says 长跑 for 马拉松) are read last and
        # flagged, not dropped. A page that never names the subject at all stays turned away.
        for number in soft:
            weights[number] = DOUBTFUL
            weights.doubtful[number] = weights.rejected.pop(number)
    on_topic = any(w >= 0.85 for w in weights.values())
    for rank, number in enumerate(foreign):
        weights[number] = 0.1 if on_topic else max(0.3, 1.0 - 0.15 * rank)
    return weights


def _foreign_titles(locale: str, sources: Sequence[SourceRef], weights: dict[int, float]) -> list[str]:
    """The titles of the best two pages in another script, when no page in the question's script is on
    its subject: the question's words cannot match their sentences, the titles of what the search
    engine ranked first for it can (pseudo-relevance feedback; "固态电池" finds "solid-state battery")."""
    own = [ref for ref in sources if _same_script(locale, ref)]
    if any(weights.get(ref.number, 0.0) >= 0.85 for ref in own):
        return []
    foreign = [ref for ref in sources if ref not in own and ref.title.strip()]
    foreign.sort(key=lambda ref: -weights.get(ref.number, 0.0))  # stable: search order among equals
    return [ref.title.strip()[:200] for ref in foreign[:2]]


def _cover_sources(ranked: list[RankedSentence], weights: dict[int, float], shown: int) -> list[RankedSentence]:
    """Give every page that is about the subject a chance: a relevant page with no sentence among
    the first `shown` gets its best-ranked one moved up, in place of the last pick of a page that
    already has several. Sentences of pages the subject model rejected (`SourceWeights.rejected`) go, and
    those of doubtful pages (`SourceWeights.doubtful`) come last."""
    rejected = getattr(weights, "rejected", {})
    ranked = [r for r in ranked if r.source not in rejected]
    # A doubtful page (SourceWeights.doubtful) only fills in: its sentences come after every sentence of
    # the pages shown to be about the subject, whatever their scores.
    # The flag travels with the sentence (`RankedSentence.doubtful`), so the writer's answer and
    # findings, which re-sort by score, keep them last too.
    doubtful = getattr(weights, "doubtful", {})
    ranked = ([r for r in ranked if r.source not in doubtful]
              + [replace(r, doubtful=True) for r in ranked if r.source in doubtful])
    if not ranked:
        return ranked
    top = ranked[:shown]
    present = {r.source for r in top}
    relevant = [n for n, w in weights.items() if w >= 0.85 and n not in present and n not in rejected]
    rest = ranked[shown:]
    for number in relevant:
        best = next((r for r in rest if r.source == number), None)
        if best is None:
            continue
        counts = {n: sum(r.source == n for r in top) for n in present}
        donors = [i for i in range(len(top) - 1, -1, -1) if counts[top[i].source] > 1]
        if not donors:
            break
        rest.remove(best)
        rest.insert(0, top.pop(donors[0]))
        top.append(best)
        present.add(number)
    return top + rest


def answer_up(ranked: list[RankedSentence], shown: int, *, answers: Callable[[str], bool],
              names_subject: Callable[[RankedSentence], bool]) -> list[RankedSentence]:
    """Where none of the first `shown` sentences answers what the part asks in its own terms (`answers`:
    "recommended for all adults aged 50 and older" for "who should get it", "shortness of breath, nausea"
    for the warning signs), the best one further down that does and is on the subject (`names_subject`:
    the caller asks a doubtful page's sentence to name it itself; it stays flagged) takes the last place
    shown."""
    if any(answers(r.text) for r in ranked[:shown]):
        return ranked
    best = next((r for r in ranked[shown:] if answers(r.text) and names_subject(r)), None)
    if best is None:
        return ranked
    rest = [r for r in ranked if r is not best]
    return [*rest[: shown - 1], best, *rest[shown - 1 :]]


def lead_sentences(candidates: Sequence[tuple[str, int]], weights: SourceWeights, shown: int) -> list[RankedSentence]:
    """The ranking's fallback when no sentence shares a word with the query (another language): each
    page's first sentence, in search order, under the same verdicts as the ranking: a rejected page
    gives none, a doubtful page's comes last (and is flagged)."""
    firsts: dict[int, str] = {}
    for sentence, number in candidates:
        if number not in weights.rejected:
            firsts.setdefault(number, sentence)
    leads = sorted(firsts.items(), key=lambda lead: lead[0] in weights.doubtful)[:shown]
    return [RankedSentence(text, number, 0.0, i, doubtful=number in weights.doubtful)
            for i, (number, text) in enumerate(leads)]


def sentence_note(r: RankedSentence) -> dict[str, Any]:
    """A ranked sentence as a step's notes keep it for the writer; `doubtful` only where it is."""
    note: dict[str, Any] = {"text": r.text, "source": r.source, "score": r.score}
    if r.doubtful:
        note["doubtful"] = True
    return note


class _SubjectCheck(Protocol):
    def __call__(self, sentence: dict[str, Any], *, itself: bool = False) -> bool: ...


def _on_subject(question: str, locale: str, sources: Sequence[SourceRef]) -> _SubjectCheck:
    """Whether a sentence is about the question's subject, so that it may answer the question.

    A search also returns neighbouring pages (solar PV next to electric cars) whose best sentences
    can score well but answer another question. The subject is what most fetched pages share of the
    question's key terms (`_shared_subject`: "solar power" of "How cheap has solar power become");
    where they share less than two tokens (most pages are on a neighbour), the subject model's first
    term joins it ("heart attack", 光伏装机). A sentence is on the subject when it and its page's title together
    (`itself`: the sentence alone) hold half of the subject's tokens. With no subject at all, any key
    term will do. A page in another script cannot be compared word for word: it stays eligible.
    """
    subject = with_competitors(subject_of(question, locale), [(ref.title, ref.text) for ref in sources])
    # Titles as the subject model reads them: another name put back to the question's ("zoster" is read
    # "shingles") and, where the lead defines the title's word as the subject, the subject named. Read
    # when a sentence of the page is checked: the reader builds this check again after every page it reads.
    titles: dict[int, str] = {}
    foreign = {ref.number for ref in sources if not _same_script(locale, ref)}
    terms = _shared_subject(question, locale, sources)
    if len(terms) < 2:  # the fetched pages agree on little (most are on a neighbouring subject)
        # The subject model's first term, not the question's first word: that is "warning" of "What are the
        # warning signs of a heart attack", and a sentence without it was never on the subject.
        named = [term.text for term in subject.terms if tokenize(term.text)]
        first = named[0] if named else next((t for t in key_terms(question, locale, fallback=False) if tokenize(t)), "")
        terms |= set(tokenize(first))
    need = math.ceil(len(terms) / 2)
    if not terms:
        terms, need = {token for term in key_terms(question, locale) for token in tokenize(term)}, 1
    pages = {ref.number: ref for ref in sources}

    def title_of(number: int) -> str:
        ref = pages.get(number)
        if ref is not None and number not in titles:
            titles[number] = title_as_read(subject, ref.title, ref.text)
        return titles.get(number, "")

    def about(sentence: dict[str, Any], itself: bool) -> bool:
        """The subject model's verdict (research.agents.subject): in its page's context, or alone."""
        ref = pages.get(sentence["source"])
        if ref is None or itself:
            return sentence_about(subject, sentence["text"]) if itself else True
        return sentence_about(subject, sentence["text"], ref.text, title=ref.title)

    def check(sentence: dict[str, Any], *, itself: bool = False) -> bool:
        if not terms or sentence["source"] in foreign:
            return True
        text = f"{sentence['text']} {'' if itself else title_of(sentence['source'])}"
        return len(terms & set(tokenize(text))) >= need and about(sentence, itself)

    return check

