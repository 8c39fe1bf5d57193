"""The offline engine itself: the Engine methods, the planner and the researcher; question analysis,
source selection, report writing and the processing step are its sibling modules (docs/offline-engine.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from research import scripts, textre
from research.agents.bilingual import in_english
from research.agents.engines.offline.process import process_step
from research.agents.engines.offline.question import (
    _CANONICAL_ORDER,
    _FACET_BY_KEY,
    _FACET_PRIORITY,
    _ONLY,
    CORE_FACETS,
    EXTRA_FACETS,
    HOW_FACETS,
    _aspect_of,
    _facet_mentions,
    _facet_title,
    _feedback_terms,
    _plan_title,
    _requested_count,
    _step_facets,
    is_small_talk,
    question_aspects,
    question_facets,
)
from research.agents.engines.offline.read import (
    UNIT_KINDS,
    about_subject,
    asked_unit,
    command_tools,
    covered,
    fact_note,
    no_source_line,
    part_kind,
    procedure_prior,
    read_more_reason,
    reader_for,
    step_queries,
)
from research.agents.engines.offline.select import (
    _cover_sources,
    _figures_bonus,
    _figures_prior,
    _foreign_titles,
    _same_script,
    _shared_subject,
    _source_weights,
    answer_up,
    lead_sentences,
    sentence_note,
)
from research.agents.engines.offline.titles import readable_steps
from research.agents.engines.offline.write import _cite, write_report
from research.agents.rank import RankedSentence, held, rank_sentences, single_chars, split_sentences, tokenize
from research.agents.subject import subject_of
from research.agents.text import detect_locale, is_chinese, key_terms
from research.agents.types import (
    AgentContext,
    CoordinatorDecision,
    Plan,
    PlanStep,
    PodcastScript,
    RunVariant,
    SlideOutline,
    SourceRef,
    StepResult,
    ToolError,
)
from research.agents.words import _function_word, _raw_words

MIN_ON_SUBJECT = 3  # pages on the subject a step reads before its part counts as covered


def _words(text: str) -> list[str]:
    """The words of a step's title and description; a Chinese run cut into jieba's words, so that no
    character pair across two words ("版的" of "团队版的价格") becomes a word the step asks for."""
    out: list[str] = []
    for word in textre.findall(r"[\w'’-]+", text):
        out += [w for w, _ in _raw_words(word)] if scripts.has_han(word) else [word]
    return out


class OfflineEngine:
    """Implements research.agents.types.Engine with extraction instead of a model."""

    name = "offline"

    def __init__(
        self, *, fetch_per_step: int = 4, sentences_per_step: int = 9, min_sentences: int = 3, per_source: int = 3
    ) -> None:
        self.fetch_per_step = fetch_per_step  # pages fetched per step (search hits beyond are not read)
        self.sentences_per_step = sentences_per_step  # sentences shown per step
        self.min_sentences = min_sentences  # off-facet sentences fill up to this many
        self.per_source = per_source  # soft cap per source, so one page doesn't fill a section

    # -- coordinator

    def coordinate(self, ctx: AgentContext) -> CoordinatorDecision:
        locale = detect_locale(ctx.question)
        if is_small_talk(ctx.question):
            if is_chinese(locale):
                answer = (
                    "你好！这里是离线引擎：不使用语言模型，而是通过检索和抽取来源原文来撰写报告。"
                    "请告诉我你想研究的问题。"
                )
            else:
                answer = (
                    "Hello! This is the offline engine: it writes reports without a language model, by "
                    "searching and quoting sources. Ask me a research question to get started."
                )
            return CoordinatorDecision("answer", locale, answer)
        return CoordinatorDecision("research", locale)

    # -- planner

    def plan(
        self,
        ctx: AgentContext,
        *,
        max_steps: int,
        background: str = "",
        feedback: str = "",
        previous: Plan | None = None,
    ) -> Plan:
        locale = ctx.locale or detect_locale(ctx.question)
        zh = is_chinese(locale)
        limit = max(1, max_steps)
        terms = key_terms(ctx.question, locale)
        extra_terms = _feedback_terms(feedback, zh) if feedback else []

        # The question's own parts first ("production", "safety"), then the generic facets fill the rest.
        aspects = question_aspects(ctx.question, locale)[:limit]
        keys = self._facet_keys(limit, feedback, previous, reserved=len(aspects)) if limit > len(aspects) else []
        if keys and not feedback and previous is None and part_kind(ctx.question) == "how":
            # "How do I set up restic …": steps, settings and pitfalls, then the usual facets if room is left.
            keys = list(dict.fromkeys([*HOW_FACETS, *keys]))[: len(keys)]
        if aspects:
            # A facet a part already asks about ("what limits …": challenges) gives way to the next one.
            covered = {f.key for a in aspects for f in question_facets(a.title)}
            dropped = set(_facet_mentions(feedback)[1]) if feedback else set()
            want = len(keys)
            keys = [k for k in keys if k not in covered]
            for key in _FACET_PRIORITY:
                if len(keys) >= want:
                    break
                if key not in keys and key not in covered and key not in dropped:
                    keys.append(key)
            keys = sorted(keys, key=_CANONICAL_ORDER.index)
        topic = " ".join(terms)
        steps: list[PlanStep] = []
        for aspect in aspects:
            query = " ".join([aspect.query, *extra_terms]).strip()
            steps.append(PlanStep(id=f"step-{len(steps) + 1}", title=aspect.title, description=query[:4000],
                                  step_type="research", need_search=True, depends_on=[]))
        for key in keys:
            facet = _FACET_BY_KEY[key]
            query = " ".join([topic, facet.query_zh if zh else facet.query_en, *extra_terms]).strip()
            steps.append(
                PlanStep(
                    id=f"step-{len(steps) + 1}",
                    title=_facet_title(facet, zh),
                    description=query[:4000],
                    step_type="research",
                    need_search=True,
                    depends_on=[],
                )
            )
        steps = readable_steps(steps, question=ctx.question, locale=locale)  # never split inside a clause
        facet_names = "、".join(s.title for s in steps) if zh else ", ".join(s.title for s in steps)
        if zh:
            thought = f"离线规划：先按问题的各部分、再按常见方面检索（{facet_names}）；关键词：{'、'.join(terms)}。"
            if feedback:
                thought += f"已根据反馈调整：{feedback.strip()}"
        else:
            thought = (
                f"Offline plan: one search step per part of the question, then per facet ({facet_names}); "
                f"key terms: {topic}."
            )
            if feedback:
                thought += f" Adjusted to the feedback: {feedback.strip()}"
        return Plan(
            locale=locale,
            title=_plan_title(ctx.question)[:300],
            thought=thought[:2000],
            has_enough_context=False,
            steps=steps,
        )

    def _facet_keys(self, limit: int, feedback: str, previous: Plan | None, reserved: int = 0) -> list[str]:
        """The facets for the steps left after `reserved` steps on the question's own parts."""
        limit -= reserved
        count = min(limit, len(CORE_FACETS))
        if previous is not None and previous.steps:
            count = min(limit, max(1, len(previous.steps) - reserved))
        wanted: list[str] = []
        dropped: list[str] = []
        if feedback:
            wanted, dropped = _facet_mentions(feedback)
            requested = _requested_count(feedback, count)
            if requested is not None:
                count = requested
            elif wanted and previous is not None:
                # "add key players": room for facets the previous plan lacked, within max_steps.
                had = {s.title for s in previous.steps}
                new = [k for k in wanted if not {_FACET_BY_KEY[k].title_en, _FACET_BY_KEY[k].title_zh} & had]
                count += len(new)
            if _ONLY.search(feedback.lower()) and wanted:
                count = len(wanted)
        count = max(1, min(limit, count))
        if count == 1 and not wanted:
            return ["current"] if reserved else ["overview"]
        pool = (
            [k for k in (*CORE_FACETS, *EXTRA_FACETS) if k != "overview"]
            if count > len(CORE_FACETS)
            else list(CORE_FACETS)
        )
        chosen = [k for k in wanted if k not in dropped][:count]
        for key in _FACET_PRIORITY:
            if len(chosen) >= count:
                break
            if key in pool and key not in chosen and key not in dropped:
                chosen.append(key)
        for key in _FACET_PRIORITY:  # everything else was dropped: fall back to what is left
            if len(chosen) >= count:
                break
            if key not in chosen and key not in dropped:
                chosen.append(key)
        return sorted(chosen, key=_CANONICAL_ORDER.index)

    # -- researcher

    def _queries(self, ctx: AgentContext, step: PlanStep) -> tuple[str, str, str]:
        """(search query, ranking query, focus): the step's words plus the question's key terms.

        The focus is the step's words that are not the question's topic: every fetched page is
        about the topic, so the facet ("history", "challenges") is what tells the steps apart.
        """
        locale = ctx.locale or detect_locale(ctx.question)
        terms = key_terms(ctx.question, locale)
        aspect = _aspect_of(ctx.question, locale, step)
        if aspect:  # a part's step searches for that part, not for the other parts too
            others = {w.lower() for a in question_aspects(ctx.question, locale) if a != aspect for w in a.words}
            terms = [t for t in terms if t.lower() not in others or t.lower() in aspect.query.lower()]
        base = step.description.strip() or step.title.strip()
        missing = [t for t in terms if t.lower() not in base.lower()]
        search_query = " ".join([base, *missing])[:400]
        rank_query = " ".join([step.title, step.description, *terms])
        own = set(tokenize(" ".join(aspect.words))) if aspect else set()
        topic = set(tokenize(" ".join(terms))) - own  # a part's own words are what it asks, not the subject
        words = _words(f"{step.title} {step.description}")
        facets = [] if aspect else _step_facets(step)
        words += [w for facet in facets for w in facet.hints.split()]
        if aspect:
            words += [w for facet in question_facets(aspect.title) for w in facet.hints.split()]
        elif not facets or facets == [_FACET_BY_KEY["overview"]]:
            # A step of no particular facet leans to what the question asks ("what limits …": challenges).
            words += [w for facet in question_facets(ctx.question) for w in facet.hints.split()]
        # The facet's words in both languages: sources in the other language still match the facet.
        words += [w for facet in facets for w in f"{facet.query_en} {facet.query_zh}".split()]
        focus = " ".join(dict.fromkeys(w.lower() for w in words if set(tokenize(w)) - topic))
        if aspect:
            # What the part asks ("limits" → the challenge words) counts even where it is a key term.
            asked = [w for facet in question_facets(aspect.title) for w in facet.hints.split()]
            focus = " ".join(dict.fromkeys([*focus.split(), *aspect.words, *aspect.kin, *asked]))
        return search_query, rank_query, focus

    def _gather(self, ctx: AgentContext, step: PlanStep, query: str, *,
                kb_skip: int = 0) -> tuple[list[SourceRef], list[str]]:
        """Search and fetch one query; returns the fetched / knowledge-base sources and the errors met.

        A step that needs no search re-reads what the job already found, and searches only when
        nothing was found yet. A failed fetch is skipped and the next hit is tried instead.
        `kb_skip`: a heavy run reads the knowledge base past the chunks the anchor run read.
        """
        if not step.need_search:
            known = [ref for ref in ctx.sources() if ref.text.strip()]
            if known:
                return known, []
        reader = reader_for(ctx, self.fetch_per_step, kb_skip=kb_skip)
        reader.search(query, self.fetch_per_step)
        return reader.sources, reader.errors

    def _read(self, ctx: AgentContext, step: PlanStep, plan: Plan, search_query: str,
              ) -> tuple[list[SourceRef], list[str], list[RankedSentence], bool, int, dict[str, Any]]:
        """Search per part and read past the top hits while the part has no supported answer, within
        the budget (pages, seconds). Returns the sources, errors, ranking (as `rank_step`) and notes:
        the queries, whether the part is covered, and the key fact (a command) a source states."""
        locale = ctx.locale or plan.locale or detect_locale(ctx.question)
        zh = is_chinese(locale)
        aspect = _aspect_of(ctx.question, locale, step)
        ranked: list[RankedSentence] = []
        if not step.need_search:
            known = [ref for ref in ctx.sources() if ref.text.strip()]
            if known:
                ranked, fallback, count = self.rank_step(ctx, step, plan, known, shown=self.sentences_per_step)
                return known, [], ranked, fallback, count, {"queries": [], "covered": True}
        asked = aspect.title if aspect else ctx.question
        kind = part_kind(asked)
        # What the part asks, in words a sentence that answers it would use: its own words and its
        # facet's ("cost": price, expensive), less the subject every page shares. A part whose own
        # words are all the subject ("How much does a heat pump cost to install" over pages on heat
        # pump costs) asks nothing more specific: any sentence on the subject may answer it.
        _, _, focus = self._queries(ctx, step)
        part_words = set(tokenize(" ".join(aspect.words))) if aspect else set()
        asked_general = set(tokenize(" ".join(subject_of(ctx.question, locale).general)))
        # Focus holds the words of the part's attribute group too ("symptoms" for "signs"), which count
        # only where the part's own words are more than the subject.
        hints = set(tokenize(focus)) if aspect else set()
        own: set[str] = set()
        words = " ".join([asked, *(aspect.words if aspect else ())])
        queries = step_queries(search_query, title=aspect.title if aspect else step.title, aspect=aspect,
                               terms=key_terms(ctx.question, locale), zh=zh)
        reader = reader_for(ctx, self.fetch_per_step)
        reader.search(queries.pop(0), self.fetch_per_step)
        fallback, count, done = True, 0, False
        doubtful: set[int] = set()
        while True:
            if reader.sources:
                ranked, fallback, count = self.rank_step(ctx, step, plan, reader.sources,
                                                         shown=self.sentences_per_step)
                # The subject as the pages the step ranks sentences from share it (not every page read).
                quoted = [ref for ref in reader.sources if any(r.source == ref.number for r in ranked)]
                check = about_subject(ctx.question, locale, quoted or reader.sources)
                # What the question asks about its subject (费用 of 要注意哪些费用和风险) is never the subject,
                # however many pages say it: only its terms' words are.
                subject = _shared_subject(ctx.question, locale, reader.sources) - asked_general
                own = (part_words | hints) - subject if part_words - subject else set()
                # Grammar words answer nothing: 和, 要 and 哪些 are in nearly every Chinese sentence. (Never all of
                # them: "Who makes Quillmate" asks for "makes", a common word, and no words would mean any sentence.)
                own = {w for w in own if not _function_word(w, "en" if w.isascii() else "zh")} or own
                # One Chinese character asks only where the part asks in it (钱能赔多少: 钱, 赔); one from its
                # facet's words (哪家 → 家) would match nearly every sentence now that characters are matched.
                own = {w for w in own if w in part_words or not single_chars([w])} or own
                # Wide enough: a near-miss page (rejected by the subject model) is read but is no source,
                # so the step reads on until enough pages on the subject back its answer.
                judged = _source_weights(ctx.question, locale, reader.sources)
                on_subject = len(reader.sources) - len(judged.rejected) - len(judged.doubtful)
                doubtful = set(judged.doubtful)
                wide = on_subject >= min(self.fetch_per_step, MIN_ON_SUBJECT)
                done = wide and not fallback and covered(
                    ranked, shown=self.sentences_per_step, asked=own, kind=kind, on_subject=check,
                    sources=reader.sources, words=words)
            if done or reader.left() <= 0 or (not reader.pending and not queries and not reader.use_kb):
                break
            ctx.emit("step.activity", {"kind": "read_more", "reason": read_more_reason(asked, reader.read, zh),
                                       "pages": reader.read})
            if not reader.more():
                if not queries:
                    break
                reader.search(queries.pop(0), self.fetch_per_step)
        notes: dict[str, Any] = {"queries": reader.queries, "covered": done, "read": reader.read}
        if kind == "how":
            notes["facts"] = fact_note(words, reader.sources)
        quoted = [ref for ref in reader.sources if any(r.source == ref.number for r in ranked)]
        check = about_subject(ctx.question, locale, quoted or reader.sources)
        # Unanswered: nothing on the subject speaks of the part at all (for "how much": states no figure), nor
        # does a doubtful page (one that may name the subject another way: its sentences are shown flagged).
        loose = "much" if kind == "much" else ""

        def on_subject_or_doubtful(sentence: dict[str, Any], *, itself: bool = False) -> bool:
            return sentence["source"] in doubtful or check(sentence, itself=itself)

        if aspect and not done and (fallback or not covered(ranked, shown=self.sentences_per_step, asked=own,
                                                            kind=loose, on_subject=on_subject_or_doubtful,
                                                            sources=reader.sources, words=words)):
            notes["unanswered"] = aspect.title
        if aspect and own:
            notes["asked"] = sorted(own)  # the words the coverage test looked for: the writer's answer too
        return reader.sources, reader.errors, ranked, fallback, count, notes

    def research(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult], *,
                 variant: RunVariant | None = None) -> StepResult:
        if variant is not None:  # a heavy run: query variants, union reranked (heavy.py)
            from research.agents.engines.offline import heavy as offline_heavy

            return offline_heavy.research_run(self, ctx, step, plan, prior, variant)
        search_query, rank_query, _ = self._queries(ctx, step)
        sources, errors, ranked, fallback, candidates, read = self._read(ctx, step, plan, search_query)
        zh = is_chinese(ctx.locale or plan.locale)
        if not sources:
            if "unanswered" in read and not errors:  # the searches worked: nothing is on this part
                line = no_source_line(read["unanswered"], zh, italic=False)
                return StepResult(step_id=step.id, title=step.title, report_md=line + "\n", notes={
                    "engine": self.name, "query": rank_query, "sources": [], "sentences": [], "fallback": False,
                    "errors": [], **read})
            detail = f" ({'; '.join(errors[:3])})" if errors else ""
            raise ToolError(f"no sources found for step '{step.title}'{detail}")
        ctx.emit(
            "step.activity",
            {"kind": "rank", "candidates": candidates, "selected": min(len(ranked), self.sentences_per_step)},
        )
        if "unanswered" in read:
            # What the step read is not about its part: said plainly, never filled with a neighbour's subject.
            quoted = [ref for ref in sources if any(r.source == ref.number for r in ranked)]
            check = about_subject(ctx.question, ctx.locale or plan.locale, quoted or sources)
            ranked = [r for r in ranked if check({"text": r.text, "source": r.source}, itself=True)]
        shown = ranked[: self.sentences_per_step]
        # A part nothing answers shows only that (its sentences on the subject stay in the notes for the
        # report's other sections): never a neighbouring subject in its place.
        # A step whose pages all turned out to be on other subjects says so on its card, never a blank.
        lines = ([no_source_line(read.get("unanswered") or step.title, zh, italic=False)]
                 if "unanswered" in read or not shown else [f"- {_cite(r.text, r.source, zh)}" for r in shown])
        report_md = "\n".join(lines) + "\n"
        return StepResult(
            step_id=step.id,
            title=step.title,
            report_md=report_md,
            notes={
                "engine": self.name,
                "query": rank_query,
                "sources": [ref.number for ref in sources],
                "sentences": [sentence_note(r) for r in ranked],
                "fallback": fallback,
                "errors": errors,
                **read,
            },
        )

    def rank_step(
        self,
        ctx: AgentContext,
        step: PlanStep,
        plan: Plan,
        sources: list[SourceRef],
        *,
        shown: int,
        lean: str = "",
        backing: Callable[[str], float] | None = None,
    ) -> tuple[list[RankedSentence], bool, int]:
        """(ranked sentences, fallback used, candidate count): the step's sentences from `sources`.

        `sources` are in search order (for a step that searched, its first hits weigh more). `lean`
        adds words to the step's focus (a heavy run's source-type emphasis); `backing(sentence)`
        multiplies a sentence's score (a heavy synthesis favours what several runs found). The
        first `shown` are the ones a section shows; a few more are ranked for the reporter to swap in.
        """
        locale = ctx.locale or plan.locale or detect_locale(ctx.question)
        aspect = _aspect_of(ctx.question, locale, step)
        own = set(tokenize(" ".join(aspect.words))) if aspect else set()  # never ignored as "the subject"
        _, rank_query, focus = self._queries(ctx, step)
        if lean:
            focus = f"{focus} {lean}".strip()
        candidates: list[tuple[str, int]] = []
        for ref in sources:
            # A question a page asks ("How much does it cost?") answers nothing: never a finding.
            candidates.extend((sentence, ref.number) for sentence in split_sentences(ref.text, locale)[:400]
                              if sentence.rstrip("\"'”’)）")[-1:] not in "?？")
        if not candidates:
            raise ToolError(f"no usable sentences in the {len(sources)} sources found for step '{step.title}'")
        weights = _source_weights(ctx.question, locale, sources)
        # English pages for a Chinese question: the step's words in English too, so that its facet or part
        # ("限制": restrict, limit) picks its own sentences. Where the question has no English (no word of it
        # in the dictionary), what the search engine's best English pages are titled stands in for it.
        english = (in_english(" ".join(key_terms(ctx.question, locale)))
                   if is_chinese(locale) and not all(_same_script(locale, ref) for ref in sources) else "")
        foreign_titles = [] if english else _foreign_titles(locale, sources, weights)
        rank_query = " ".join([rank_query, *foreign_titles])
        if english:
            rank_query, focus = f"{rank_query} {in_english(rank_query)}", f"{focus} {in_english(focus)}"
        if step.need_search:
            # The step's own search ranked the pages for what this step asks: its first hits are the
            # pages most about it (sources are in the order they were found).
            for rank, ref in enumerate(sources):
                weight = weights.get(ref.number, 1.0)
                # (Not when the pages on the subject are in another script: then a page in the
                # question's script that lacks its subject matched only a word or two, "量产".)
                if rank < 2 and ref.number not in weights.doubtful and not (
                        foreign_titles and weight < 0.34 and _same_script(locale, ref)):
                    # The search engine's two best hits are on the subject even when they do not
                    # repeat the question's long terms ("公共充电桩" for "中国电动汽车充电桩").
                    weight = max(weight, 0.9)
                weights[ref.number] = weight * max(0.6, 1.0 - 0.1 * rank)
        if aspect and own:
            # A part's step prefers the pages that speak of that part at all.
            for ref in sources:
                if held(own, f"{ref.title} {ref.text}") != own:
                    weights[ref.number] = weights.get(ref.number, 1.0) * 0.7
        # A "how much" part wants the sentence with the figure, as a figures step does.
        kind = part_kind(aspect.title if aspect else ctx.question)
        figures = kind == "much" or _FACET_BY_KEY["figures"] in _step_facets(step)
        base_prior: Callable[[str], float] = _figures_prior if figures else _figures_bonus
        if kind == "how":  # "how do I …": the sentences that state a step as code ("run restic init …")
            base_prior = procedure_prior(command_tools(ctx.question, locale))
        unit = asked_unit(aspect.title if aspect else ctx.question) if kind in UNIT_KINDS else None
        if unit is not None:
            # "几岁" wants an age, "how soon" a span of time: a figure in that unit over any other figure;
            # "who should get it" a sentence that names people who should; "the warning signs" symptoms.
            figure_prior, base_prior = base_prior, lambda text: figure_prior(text) * (1.5 if unit.search(text) else 1.0)
        prior = base_prior if backing is None else (lambda text: base_prior(text) * backing(text))
        # (The subject's English too, which every English page says: "solid-state battery"; not what is asked.)
        subject_terms = " ".join(t.text for t in subject_of(ctx.question, locale).terms) if english else ""
        subject_english = in_english(subject_terms)
        ignore = _shared_subject(ctx.question, locale, sources, also=subject_english) - own

        def rank_pool(pool: list[tuple[str, int]], limit: int) -> list[RankedSentence]:
            return rank_sentences(
                rank_query,
                pool,
                limit=limit,
                locale=locale,
                per_source=self.per_source,
                focus=focus,
                prior=prior,
                source_weight=weights,
                # A procedure's steps share their words ("restic init --repo /srv/restic-repo", then "restic -r
                # /srv/restic-repo backup ~"): diversity would keep one command and drop the next.
                diversity=0.1 if kind == "how" else 0.3,
                floor=0.35,
                ignore=ignore,
            )

        # Rank a few more than the step shows, so the reporter can swap out sentences other steps used.
        ranked = _cover_sources(rank_pool(candidates, shown * 2 + 2), weights, shown)
        if kind in ("who", "signs") and unit is not None:
            # The people who should, the symptoms: a sentence that says them in any words is the answer. Those
            # are ranked on their own too: the one a page states may be its fourth, past the cap per page.
            asked_for = unit
            answering = [c for c in candidates if asked_for.search(c[0]) is not None]
            extra = _cover_sources(rank_pool(answering, shown), weights, shown) if answering else []
            ranked += [r for r in extra if all(r.text != x.text for x in ranked)]
            check = about_subject(ctx.question, locale, sources)
            ranked = answer_up(ranked, shown, answers=lambda text: asked_for.search(text) is not None,
                               names_subject=lambda r: check({"text": r.text, "source": r.source}, itself=r.doubtful))
        if aspect is None and question_aspects(ctx.question, locale) and any(not r.doubtful for r in ranked):
            # A question in parts is answered by its parts' steps; a facet step beside them (background,
            # outlook) is context, which pages shown to be on the subject give: a doubtful page's sentences
            # fill in there only where no such page speaks.
            ranked = [r for r in ranked if not r.doubtful]
        if ranked:
            return ranked, False, len(candidates)
        # Nothing shares a word with the query (e.g. another language): lead sentences, one per source.
        return lead_sentences(candidates, weights, shown), True, len(candidates)

    def synthesize(self, ctx: AgentContext, step: PlanStep, plan: Plan, runs: list[StepResult]) -> StepResult:
        from research.agents.engines.offline import heavy as offline_heavy

        return offline_heavy.synthesize(self, ctx, step, plan, runs)

    # -- coder

    def process(self, ctx: AgentContext, step: PlanStep, plan: Plan, prior: list[StepResult]) -> StepResult:
        return process_step(ctx, step, plan, prior, engine=self.name)

    # -- reporter

    def report(
        self,
        ctx: AgentContext,
        plan: Plan,
        results: list[StepResult],
        *,
        style: str,
        on_delta: Callable[[str], None],
    ) -> str:
        return write_report(ctx, plan, results, style=style, on_delta=on_delta,
                            sentences_per_step=self.sentences_per_step)

    # -- derived outputs

    def podcast_script(self, ctx: AgentContext, report_md: str) -> PodcastScript:
        from research.render.podcast_script import (
            podcast_script_from_markdown,  # render imports lazily: keep agents light
        )

        return podcast_script_from_markdown(report_md, locale=ctx.locale)

    def slide_outline(self, ctx: AgentContext, report_md: str) -> SlideOutline:
        from research.render.derive import slide_outline_from_markdown

        return slide_outline_from_markdown(report_md, locale=ctx.locale)
