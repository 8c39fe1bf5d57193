"""Extractive ranking for the offline engine: sentence splitting, tokenizing, BM25, near-duplicates.

Pure functions, no Django, no model, no randomness. The one rule that matters downstream: a
sentence returned by `split_sentences` is a verbatim slice of its source text (only runs of
whitespace are collapsed), so a citation check can find it in the page it cites.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from research import ir, scripts, textre
from research.agents.text import detect_locale, is_chinese
from research.agents.words import _function_word
from research.ir import BM25, stem, tokenize
from research.report.markdown import identifier_join, unescaped
from research.report.sentences import sentence_bounds
from research.tools.clean import is_furniture

__all__ = ["BM25", "RankedSentence", "held", "near_duplicate", "rank_sentences", "single_chars", "split_sentences",
           "stem", "tokenize"]


def single_chars(terms: Collection[str]) -> frozenset[str]:
    """The one-character Chinese content words among `terms` (赔, 钱): matched in sentences by `tokenize`'s
    `chars`. Grammar and very common characters (的, 要, 能, 好, 大: function words) are in every sentence and
    left out."""
    return frozenset(c for c in ir.single_chars(terms) if not _function_word(c, "zh"))


def held(words: Collection[str], text: str) -> set[str]:
    """The words (index terms) among `words` that `text` holds, one-character Chinese words included."""
    return set(words) & set(tokenize(text, chars=single_chars(words)))

_WS = textre.compile(r"\s+")

_CJK_TERMINATORS = "。！？"
_TERMINATORS = ".!?" + _CJK_TERMINATORS
_CLOSERS = "\"'”’)）」』】"
_TRAILING_FOOTNOTES = textre.compile(r"(?:\[[^\[\]\s]{1,12}\])+$")
_LIST_MARKER = textre.compile(r"^(?:[-*+•·]\s+|\d{1,3}[.)]\s+|>\s*)+")

# Sentences that are page furniture rather than content: phrases, not words, so that prose about cookies,
# JavaScript, copyright or registering ("注册资本", "登录火星") is still citable. Bylines, reading times,
# sponsor blurbs and share lines are research.tools.clean's (is_furniture below).
_BOILERPLATE = textre.compile(
    r"cookies?\s+(?:policy|settings|preferences|consent)|(?:we|this (?:site|website)) uses? cookies|"
    r"accept (?:all )?cookies|privacy policy|terms of (?:use|service)|all rights reserved|©|"
    r"copyright\s+(?:©|\(c\)|\d{4})|subscribe (?:to (?:our|the) |now|today|for free)|(?:our|free|weekly|daily|email) "
    r"newsletter|sign (?:up|in) (?:for free|now|today|to (?:continue|read|comment|view))|"
    r"log ?in to (?:continue|read|comment|view)|(?:enable|requires?|turn on) javascript|"
    r"javascript (?:is )?(?:disabled|required|must be enabled)|click here|read more|share this|advertisement|"
    r"skip to (?:main )?content|版权所有|隐私政策|请(?:先)?登录|登录后(?:查看|阅读|评论)|立即(?:登录|注册)|免费注册|"
    r"登录/注册|注册/登录|点击(?:这里|此处|查看|进入|下载|阅读)|订阅(?:我们|本)|免责声明|上一篇|下一篇|相关阅读|返回顶部|"
    r"分享到|扫码|关注我们",
    textre.I,
)
# Characters that mark markup, links or tables; a sentence with them is either not prose or would
# change meaning in the Markdown report ([n] is our citation syntax), so it is skipped.
_MARKUP = textre.compile(r"https?://|www\.|[\[\]|*_`<>{}@]|\\")

_SENTENCE_MIN_EN, _SENTENCE_MAX_EN = 40, 400
_SENTENCE_MIN_ZH, _SENTENCE_MAX_ZH = 12, 200
_SHORT_LINE = 50  # an unterminated line shorter than this is a heading or menu item, not wrapped prose
# Hard-wrapped prose has lines of one width: the line after a wrap is longer by a word at most. An unterminated
# line that the next one outruns by more is a title or heading over its paragraph, however long the title.
_WRAP_SLACK = 24


# ---------------------------------------------------------------- sentences


def _ends_sentence(text: str) -> bool:
    return bool(text) and text.rstrip(_CLOSERS)[-1:] in _TERMINATORS


def _blocks(text: str) -> list[str]:
    """Paragraphs with hard line wraps undone; headings, tables and list items kept apart."""
    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "|", "```", "---", "===")):
            flush()
            continue
        marker = _LIST_MARKER.match(line)
        if marker:
            flush()
            line = line[marker.end() :].strip()
        elif current and not _ends_sentence(current[-1]) and (
                len(current[-1]) < _SHORT_LINE or len(line) > len(current[-1]) + _WRAP_SLACK):
            # The previous line was unterminated and no wrapped prose (a menu item, a caption, a page's title
            # over its first paragraph): don't glue prose to it.
            flush()
        current.append(line)
    flush()
    return blocks


def _split_block(block: str) -> list[str]:
    """The report's own sentence rule (research.report.sentences), footnote markers kept with their sentence."""
    return [block[start:end] for start, end in sentence_bounds(block, footnotes=True)]


_HAN_RUN = textre.compile(f"[{scripts.HAN}]{{6,}}")


def _letters_ratio(text: str, *, digits: bool = False) -> float:
    """The share of visible characters that are letters (and digits, with `digits`)."""
    visible = [ch for ch in text if not ch.isspace()]
    if not visible:
        return 0.0
    return sum(1 for ch in visible if ch.isalpha() or (digits and ch.isdigit())) / len(visible)


def _without_code_marks(text: str) -> str:
    """The text less the marks that belong to code stated inline, which are no markup: an identifier's
    underscore (RESTIC_PASSWORD_FILE), "@" or a backslash inside a token (lefthook@latest,
    %APPDATA%\\pip\\pip.ini), and a comparison (>=10.0.0, <5%). A tag (<div>), a handle (@name), a table's
    "|" stay markup."""
    out: list[str] = []
    for i, ch in enumerate(text):
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        inline = (identifier_join(text, i)
                  or (ch in "@\\" and not before.isspace() and after.isalnum())
                  or (ch in "<>" and (after == "=" or after.isdigit())))
        if not inline:
            out.append(ch)
    return "".join(out)


def is_content_sentence(sentence: str) -> bool:
    """Prose worth citing: terminated, sensible length, mostly letters, no markup or page furniture. Judged
    on the characters a reader sees (`unescaped`): an escaped "\\~" is a tilde, and code stated inline
    (an identifier, a version spec, a path) holds no markup (`_without_code_marks`)."""
    shown = unescaped(sentence)
    if not _ends_sentence(shown) or _MARKUP.search(_without_code_marks(shown)) or _BOILERPLATE.search(shown):
        return False
    if shown[:1] in "<>":  # at the start of a report line it would open a block quote
        return False
    if is_furniture(shown):  # a byline or blurb in text fetched or indexed before cleaning (research.tools.clean)
        return False
    cjk = scripts.count_han(shown)
    if cjk >= 6:
        if not _SENTENCE_MIN_ZH <= len(shown) <= _SENTENCE_MAX_ZH:
            return False
    else:
        if not _SENTENCE_MIN_EN <= len(shown) <= _SENTENCE_MAX_EN or len(shown.split()) < 6:
            return False
        first = shown.lstrip("\"'“(")[:1]
        if first.islower():  # a fragment cut from the middle of something
            return False
    sum_digits = sum(ch.isdigit() for ch in shown)
    # A Chinese sentence is a third as long as its English twin for the same figures
    # ("截至2023年底…达到859.6万台，同比增长65%。"), so it may hold more digits per character, and its
    # figures count with its words: "例如2014—2015年流行季，美国监测到的疫苗保护效果仅约19%。" is 59% characters.
    share = 0.4 if cjk >= 6 else 0.25
    # (Only in prose: a run of six Han characters or more, not a list of names and numbers.)
    words = _letters_ratio(shown, digits=cjk >= 6 and _HAN_RUN.search(shown) is not None)
    return words >= 0.6 and sum_digits <= len(shown) * share


def split_sentences(text: str, locale: str = "en-US") -> list[str]:
    """Content sentences of a page, in order, each a verbatim slice of `text` up to whitespace.

    Splits on English and Chinese sentence punctuation (abbreviations, initials and decimals are
    not boundaries), drops trailing footnote markers like "[3]", and keeps only sentences that pass
    `is_content_sentence`. `locale` is the page's expected language; the split itself follows the
    script of each sentence, so mixed pages work.
    """
    del locale  # the splitter is script-driven; the parameter keeps the call sites explicit
    out: list[str] = []
    seen: set[str] = set()
    for block in _blocks(text):
        for part in _split_block(block):
            sentence = _TRAILING_FOOTNOTES.sub("", _WS.sub(" ", part).strip())
            sentence = _LIST_MARKER.sub("", sentence) if _LIST_MARKER.match(sentence) else sentence
            if sentence not in seen and is_content_sentence(sentence):
                seen.add(sentence)
                out.append(sentence)
    return out


# ---------------------------------------------------------------- tokens


# ---------------------------------------------------------------- near-duplicates


def _shingles(text: str) -> set[str]:
    tokens = tokenize(text)
    if len(tokens) < 2:
        return set(tokens)
    return {tokens[i] + " " + tokens[i + 1] for i in range(len(tokens) - 1)}


def near_duplicate(a: str, b: str, threshold: float = 0.6) -> bool:
    """True when two sentences say the same thing: Jaccard of token-bigram shingles ≥ threshold,
    or one is almost entirely contained in the other (a sentence quoted with an added clause)."""
    sa, sb = _shingles(a), _shingles(b)
    if not sa or not sb:
        return _WS.sub(" ", a).strip().lower() == _WS.sub(" ", b).strip().lower()
    inter = len(sa & sb)
    if inter / len(sa | sb) >= threshold:
        return True
    return inter / min(len(sa), len(sb)) >= max(threshold, 0.85)


# ---------------------------------------------------------------- ranking


def _on_topic(tokens: Sequence[str], topic_sets: Sequence[set[str]]) -> bool:
    present = set(tokens)
    return any(3 * len(term & present) >= len(term) for term in topic_sets)


@dataclass(frozen=True)
class RankedSentence:
    text: str
    source: int  # the SourceRef.number to cite
    score: float
    position: int  # index in the input, the deterministic tie-breaker
    doubtful: bool = False  # its page is not shown to be on the subject: it only fills in, never leads


def rank_sentences(
    query: str,
    sentences_with_source: Sequence[tuple[str, int]],
    *,
    limit: int,
    locale: str = "en-US",
    per_source: int | None = None,
    dedupe_threshold: float = 0.6,
    focus: str = "",
    topic: Sequence[str] = (),
    prior: Callable[[str], float] | None = None,
    source_weight: Mapping[int, float] | None = None,
    diversity: float = 0.0,
    floor: float = 0.0,
    ignore: Collection[str] = (),
) -> list[RankedSentence]:
    """The `limit` best sentences for `query` by BM25, near-duplicates dropped.

    `focus` is scored a second time and added: the words that tell this query apart from its
    siblings (a step's facet, when every candidate already shares the question's topic).
    `topic`, when given, lists the subject's terms; a sentence must contain at least a third of
    the tokens of one of them (a word, or every third character bigram of a Chinese term). A sentence
    that only matches the facet ("costs fell 40 percent") is about something else.
    `prior(sentence)` multiplies the score (e.g. favour sentences with figures), and so does
    `source_weight[source]` (how relevant the whole page is; a source left out weighs 1).
    `diversity` (0..1) picks by maximal marginal relevance: each next sentence maximises
    (1 - diversity) * relevance - diversity * its highest word overlap with those already picked,
    so a second sentence repeating the first one's words loses to one that adds something.
    `floor` > 0 scores relative to the best match (0..1) plus `floor`, so a sentence of a relevant
    page that shares no word with the query can still be picked (pages say "dry rooms", not
    "limits"). `ignore` lists tokens left out of the query and focus (the subject every page shares).

    Sentences whose language differs from `locale` (Chinese vs. not) count half, so a Chinese
    report prefers Chinese sources when both exist. `per_source` is a soft cap: it spreads the
    picks over sources first and is relaxed when there are not enough sentences otherwise.
    Sentences sharing no term with the query are never returned.
    """
    if limit <= 0 or not sentences_with_source:
        return []
    want_zh = is_chinese(locale)
    # A Chinese query's one-character words (赔, 钱) match the sentences that hold them, as its bigrams do.
    chars = single_chars([*tokenize(query), *tokenize(focus)]) - set(ignore)
    docs = [tokenize(s, chars=chars) for s, _ in sentences_with_source]
    topic_sets = [set(t) for t in (tokenize(term) for term in topic) if t]
    bm25 = BM25(docs)
    skip = set(ignore)
    scores = bm25.score([t for t in tokenize(query) if t not in skip])
    if focus:
        focus_scores = bm25.score([t for t in tokenize(focus) if t not in skip])
        scores = [a + b for a, b in zip(scores, focus_scores, strict=True)]
    if floor > 0:
        top = max(scores) or 1.0
        scores = [s / top + floor for s in scores]
    candidates: list[RankedSentence] = []
    for position, ((text, source), score) in enumerate(zip(sentences_with_source, scores, strict=True)):
        if score <= 0 or (topic_sets and not _on_topic(docs[position], topic_sets)):
            continue
        if is_chinese(detect_locale(text)) != want_zh:
            score *= 0.5
        if prior is not None:
            score *= prior(text)
        if source_weight is not None:
            score *= source_weight.get(source, 1.0)
        if score <= 0 or score < floor / 2:  # with a floor: neither a match nor from a relevant page
            continue
        candidates.append(RankedSentence(text, source, round(score, 6), position))
    candidates.sort(key=lambda r: (-r.score, r.position))

    if diversity > 0:
        candidates = _mmr_order(candidates, docs, diversity, limit * 4)

    chosen: list[RankedSentence] = []
    skipped: list[RankedSentence] = []
    per: Counter[int] = Counter()
    for cand in candidates:
        if len(chosen) >= limit:
            break
        if any(near_duplicate(cand.text, c.text, dedupe_threshold) for c in chosen):
            continue
        if per_source is not None and per[cand.source] >= per_source:
            skipped.append(cand)
            continue
        chosen.append(cand)
        per[cand.source] += 1
    for cand in skipped:  # relax the cap when the other sources ran dry
        if len(chosen) >= limit:
            break
        if not any(near_duplicate(cand.text, c.text, dedupe_threshold) for c in chosen):
            chosen.append(cand)
    if diversity <= 0:
        chosen.sort(key=lambda r: (-r.score, r.position))
    return chosen


def _mmr_order(
    candidates: list[RankedSentence], docs: Sequence[Sequence[str]], diversity: float, limit: int
) -> list[RankedSentence]:
    """The first `limit` candidates in maximal-marginal-relevance order (scores normalised to 0..1)."""
    if not candidates:
        return []
    top = candidates[0].score or 1.0
    pool = list(candidates)
    words = {c.position: set(docs[c.position]) for c in pool}
    ordered: list[RankedSentence] = []
    while pool and len(ordered) < limit:

        def gain(c: RankedSentence) -> tuple[float, int]:
            mine = words[c.position]
            overlap = max(
                (len(mine & words[o.position]) / (len(mine | words[o.position]) or 1) for o in ordered), default=0.0
            )
            return ((1 - diversity) * c.score / top - diversity * overlap, -c.position)

        best = max(pool, key=gain)
        ordered.append(best)
        pool.remove(best)
    return ordered
