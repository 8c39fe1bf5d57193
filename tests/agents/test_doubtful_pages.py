"""Pages the subject model neither keeps nor turns away (issue 32): a relevant page may name its subject
another way ("herpes zoster" for shingles, "knee arthroplasty" for knee replacement), so a rejection for
want of evidence is soft: the page is read last, never turned away; a page that names another subject
(another place, another kind) still is. Pages written for these tests."""

from __future__ import annotations

from research.agents.engines.offline.parts import _en_parts
from research.agents.engines.offline.select import (
    DOUBTFUL,
    _cover_sources,
    _source_weights,
    lead_sentences,
    sentence_note,
)
from research.agents.engines.offline.write import _answer, _key_findings, _Section
from research.agents.rank import RankedSentence
from research.agents.scope import scope_verdict
from research.agents.subject import page_about, subject_of
from research.agents.types import SourceRef
from research.agents.words import _function_word
from research.ir import stem

Q = "How much does a knee replacement cost in the United States?"
ON = ("Knee replacement prices in the United States",
      "A knee replacement cost insurers about 30,000 dollars on average in 2023. Knee replacement prices vary "
      "by hospital, and outpatient knee replacement is cheaper.")
# The technical name up front, the usual one said once further on: a page that never once said
# "replacement" would be firmly turned away, as "Solid-state drive production" is for solid-state batteries.
SYNONYM = ("Total knee arthroplasty: prices vary by hospital",
           "A total knee arthroplasty is one of the most common operations in the United States. The average "
           "cost to insurers was about 30,000 dollars in 2023, but prices ranged from 17,000 to 60,000 "
           "dollars. Medicare pays about 20,000 dollars for the procedure, which patients call a knee replacement.")


def _refs(*pages: tuple[str, str]) -> list[SourceRef]:
    return [SourceRef(n, f"https://pages.example/{n}", t, x) for n, (t, x) in enumerate(pages, start=1)]


def test_a_page_that_names_the_subject_another_way_is_doubtful_not_rejected():
    verdict = page_about(subject_of(Q, "en-US"), *SYNONYM)
    assert not verdict.about and not verdict.firm, verdict
    weights = _source_weights(Q, "en-US", _refs(ON, SYNONYM))
    assert 2 in weights.doubtful and 2 not in weights.rejected and weights[2] == DOUBTFUL
    assert 1 not in weights.doubtful and weights[1] > DOUBTFUL


def test_a_page_on_another_place_is_still_turned_away_firmly():
    question = "中国电动汽车充电桩的数量和利用率如何？"
    us = ("美国电动汽车充电桩的数量和利用率", "美国公共充电桩约16万个，利用率约为15%。美国电动汽车充电桩分布不均。")
    verdict = page_about(subject_of(question, "zh-CN"), *us)
    assert not verdict.about and verdict.firm
    weights = _source_weights(question, "zh-CN", _refs(us))
    assert 1 in weights.rejected and 1 not in weights.doubtful


def test_a_doubtful_page_s_sentences_come_after_every_sentence_of_the_pages_on_the_subject():
    weights = _source_weights(Q, "en-US", _refs(ON, SYNONYM))
    ranked = [RankedSentence("The average price paid by insurers was about 30,000 dollars.", 2, 3.0, 0),
              RankedSentence("A knee replacement cost insurers about 30,000 dollars.", 1, 1.0, 1)]
    assert [r.source for r in _cover_sources(ranked, weights, 5)] == [1, 2]


def test_a_page_unlike_the_question_altogether_is_not_kept_as_doubtful():
    # Few of the question's terms: another topic, not the subject named another way.
    other = ("Tomato blight in wet summers", "Blight spreads fast in wet weather. Growers spray copper twice a week.")
    weights = _source_weights(Q, "en-US", _refs(ON, other))
    assert 2 not in weights.doubtful and weights[2] <= 0.05


def test_what_is_asked_of_the_subject_is_not_the_subject():
    # "the warning signs of a heart attack": signs are asked of the subject, the subject follows "of".
    assert _en_parts("What are the warning signs of a heart attack in women")[1] == "heart attack"


def test_speed_is_not_a_past_tense():
    assert stem("speed") == "speed" and stem("needed") == "need" and stem("cameras") == "camera"


def test_chinese_grammar_words_end_a_subject_and_verbs_name_none():
    assert all(_function_word(w, "zh") for w in ("每周", "应该", "多少", "以前"))
    assert not any(_function_word(w, "zh") for w in ("驾驶", "蓄能", "座椅"))
    # 引发 is a verb: "疲劳驾驶引发" is no compound whose head a title must name.
    question = "疲劳驾驶引发的事故有多少，怎样预防？"
    verdict = scope_verdict(question, "zh-CN", "疲劳驾驶：被低估的交通杀手", "疲劳驾驶每年造成大量事故。")
    assert verdict is None or verdict.about


def test_the_doubtful_flag_travels_from_the_ranking_into_the_step_notes():
    weights = _source_weights(Q, "en-US", _refs(ON, SYNONYM))
    ranked = [RankedSentence("The average price paid by insurers was about 30,000 dollars.", 2, 3.0, 0),
              RankedSentence("A knee replacement cost insurers about 30,000 dollars.", 1, 1.0, 1)]
    notes = [sentence_note(r) for r in _cover_sources(ranked, weights, 5)]
    assert [n.get("doubtful", False) for n in notes] == [False, True]


def _section(title: str, *sentences: dict[str, object]) -> _Section:
    return _Section(title, list(sentences), "", True, {})


def test_the_answer_and_key_findings_put_no_doubtful_sentence_first_whatever_its_score():
    # The writer re-sorts by score (and favours figures): the flag, not the step's order, keeps a doubtful
    # page's sentence behind every sentence of the pages shown to be on the subject.
    doubtful = {"text": "Average prices paid by insurers reached 30,000 dollars in 2023 across 400 hospitals.",
                "source": 2, "score": 9.0, "doubtful": True}
    firm = {"text": "A knee replacement is priced by each hospital on its own terms.", "source": 1, "score": 1.0}
    section = _section("Knee replacement cost", doubtful, firm)
    answer = _answer(Q, [], [section])
    assert answer and answer[0][1] is firm
    findings = _key_findings(Q, [section], "academic")
    assert [s for _, s in findings] == [firm]


def test_the_ranking_s_fallback_keeps_the_subject_model_s_verdicts():
    # When no sentence shares a word with the query, each page's first sentence stands in: never one of a
    # page on another subject (it was how a triathlon page came to lead a report on marathons), and a
    # doubtful page's last.
    weights = _source_weights(Q, "en-US", _refs(SYNONYM, ON, ("Hip replacement prices in the United Kingdom",
                                                               "A hip replacement costs 12,000 pounds.")))
    weights.rejected[3] = "another place"  # as the subject model would say of a page on another country
    candidates = [("A total knee arthroplasty is common.", 1), ("A knee replacement cost 30,000 dollars.", 2),
                  ("A hip replacement costs 12,000 pounds.", 3)]
    leads = lead_sentences(candidates, weights, 5)
    assert [(r.source, r.doubtful) for r in leads] == [(2, False), (1, True)]


MARATHON_Q = "马拉松比赛中猝死的风险有多大？"
# Names the sudden death but never the marathon (it says 长跑): no evidence either way.
LONG_RUN = ("跑步前要不要做心电图？", "越来越多的人报名参加长跑比赛。医生建议参赛者赛前做一次静息心电图，"
            "有家族猝死史的人还应做运动负荷试验。长跑比赛中的猝死多数由心脏问题引起。")
# Sudden death in another sport, said in its title: another subject.
FOOTBALL = ("足球运动员场上猝死的风险有多大", "职业足球运动员每年心源性猝死的风险约为每10万人0.7至1例。"
            "足球运动员场上猝死多由心脏疾病引起。")


def test_when_no_page_is_on_the_subject_the_pages_turned_away_for_want_of_evidence_are_doubtful():
    subject = subject_of(MARATHON_Q, "zh-CN")
    long_run, football = page_about(subject, *LONG_RUN), page_about(subject, *FOOTBALL)
    assert not long_run.about and not long_run.firm, long_run
    assert not football.about and football.firm, football
    unrelated = ("光伏电站的度电成本", "2023年大型光伏电站的度电成本比2010年下降了约90%，逆变器和支架占了一半以上。")
    weights = _source_weights(MARATHON_Q, "zh-CN", _refs(LONG_RUN, FOOTBALL, unrelated))
    # Read last and flagged, never an empty report: but the page on another sport stays turned away, and
    # so does a page that names no term of the subject at all (never a neighbour's subject as filler).
    assert 1 in weights.doubtful and 1 not in weights.rejected and weights[1] == DOUBTFUL
    assert 2 in weights.rejected and 2 not in weights.doubtful
    assert 3 not in weights.doubtful and not weights.get(3)
    # With a page on the subject among them, the soft verdict turns the page away as before.
    on = ("马拉松比赛中的猝死：风险有多大", "马拉松比赛中猝死的风险约为每10万名参赛者0.5例，多发生在比赛最后阶段。")
    weights = _source_weights(MARATHON_Q, "zh-CN", _refs(LONG_RUN, FOOTBALL, on))
    assert 1 in weights.rejected and 1 not in weights.doubtful
    assert 3 not in weights.rejected and weights[3] > DOUBTFUL


def test_a_page_with_none_of_the_subject_s_words_is_turned_away_not_doubtful():
    # It shares the question's general words (事故, 多少, 预防), so it passes the share of key terms, but it
    # never uses a word of the subject (疲劳, 驾驶) in any form: it cannot be naming the subject another way.
    question = "疲劳驾驶引发的事故有多少，怎样预防？"
    elsewhere = ("矿山安全：事故有多少，怎样预防",
                 "去年矿山事故有多少起？专家说，预防事故要靠通风和监测。矿山事故的预防重在培训。")
    part_word = ("长途驾驶的事故有多少，怎样预防",
                 "长途驾驶的事故有多少？专家说，预防事故要每两小时停车休息。长途驾驶要预防事故。")
    weights = _source_weights(question, "zh-CN", _refs(elsewhere, part_word))
    assert 1 in weights.rejected and 1 not in weights.doubtful and weights[1] == 0.0
    assert 2 in weights.doubtful and weights[2] == DOUBTFUL  # 驾驶 is a word of the subject: maybe it, said otherwise
    # The English way: "knee" and "replacement" are nowhere on a page that shares only "cost" and the place.
    implant = ("What does a dental implant cost in the United States?",
            "A dental implant costs about 4,000 dollars in the United States. Costs vary by state and by dentist.")
    weights = _source_weights(Q, "en-US", _refs(ON, implant))
    assert 2 not in weights.doubtful


def test_a_part_only_a_doubtful_page_answers_is_shown_from_it_not_called_unanswered():
    # No page shown to be on the subject says how long recovery takes; the page that calls the operation
    # "total knee arthroplasty" does. The part is answered from it (flagged doubtful), not "No source found".
    from research.agents.engines.offline import OfflineEngine
    from tests.support.fake_context import FakeContext, FakePage

    question = "How much does a knee replacement cost in the United States, and how long does recovery take?"
    on = FakePage("https://pages.example/on", *ON)
    recovery = FakePage("https://pages.example/tka", "Total knee arthroplasty: what recovery looks like",
                        "After a total knee arthroplasty, recovery takes about six weeks before most patients walk "
                        "without a cane. Full recovery takes up to a year. Patients call it a knee replacement.")
    ctx = FakeContext(question=question, pages=[on, recovery])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=2)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    part = next(r for r in results if "recovery" in r.title.lower())
    assert "unanswered" not in part.notes, part.notes
    assert "six weeks" in part.report_md and "No source found" not in part.report_md


def _facet_and_part_sources(question: str, pages: list) -> tuple[dict[str, set[int]], dict[str, int]]:
    """The sources each step of a four-step plan quotes, by step title; and each page's source number."""
    from research.agents.engines.offline import OfflineEngine
    from tests.support.fake_context import FakeContext

    ctx = FakeContext(question=question, pages=pages)
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=4)
    quoted = {step.title: {s["source"] for s in engine.research(ctx, step, plan, []).notes["sentences"]}
              for step in plan.steps}
    return quoted, {s.url: s.number for s in ctx.sources()}


def test_a_facet_beside_the_question_s_parts_quotes_no_doubtful_page_while_a_page_on_the_subject_speaks():
    # A question in parts is answered by its parts; its facets (background, current state) are context, and
    # a doubtful page (maybe the subject named another way, maybe a near miss) is no source of context
    # while a page shown to be on the subject gives it. Its part still reads it.
    from tests.support.fake_context import FakePage

    question = "How much does a knee replacement cost in the United States, and how long does recovery take?"
    on = FakePage("https://pages.example/on", ON[0], ON[1] + " Knee replacement surgery has been performed "
                  "since the 1970s. Today knee replacement is done in most hospitals, and demand for knee "
                  "replacement keeps growing as the population ages.")
    tka = FakePage("https://pages.example/tka", "Total knee arthroplasty: history, recovery and demand",
                   "After a total knee arthroplasty, recovery takes about six weeks before most patients walk "
                   "without a cane. The first total knee arthroplasty was done in 1968, and demand has grown "
                   "ever since. Today most hospitals offer it. Patients call it a knee replacement.")
    quoted, number = _facet_and_part_sources(question, [on, tka])
    parts = [title for title in quoted if "recovery" in title.lower() or "cost" in title.lower()]
    facets = [title for title in quoted if title not in parts]
    assert len(parts) == 2 and facets, quoted
    recovery = next(title for title in parts if "recovery" in title.lower())
    assert number[tka.url] in quoted[recovery]
    for title in facets:
        assert number[on.url] in quoted[title] and number[tka.url] not in quoted[title], (title, quoted)
    # Where no page on the subject speaks, the doubtful page fills the facets in, flagged, as before.
    quoted, number = _facet_and_part_sources(question, [tka])
    assert any(number[tka.url] in quoted[title] for title in facets), quoted


def test_a_question_of_one_part_still_quotes_a_doubtful_page_in_its_facets():
    # Without parts, the facets are how the question is answered: a page that names the subject another way
    # fills in after the pages on it, as before.
    from tests.support.fake_context import FakePage

    on = FakePage("https://pages.example/on", *ON)
    tka = FakePage("https://pages.example/tka", *SYNONYM)
    quoted, number = _facet_and_part_sources(Q, [on, tka])
    assert any(number[tka.url] in sources for sources in quoted.values()), quoted


def test_a_colloquial_chinese_question_weighs_pages_by_its_content_words_not_its_bigrams():
    # "工作受伤多久能拿到赔偿": the run's bigrams are mostly grammar (伤多, 多久, 久能, 能拿); a page on the rules that
    # says 受伤 and 拿到 (and 补偿, not 赔偿) shares what the question asks, and is read as on the subject.
    question = "工作受伤多久能拿到赔偿，一般赔多少钱？"
    rules = ("《工伤保险条例》解读：哪些情况单位要给补偿",
             "按照条例，职工在工作中受伤，如果被认定为工伤，职工就能从单位和工伤保险基金拿到补偿。")
    stress = ("工作压力大怎么办", "工作压力大的人可以每天运动半小时，和家人朋友多聊天。")
    weights = _source_weights(question, "zh-CN", _refs(rules, stress))
    assert weights[1] >= 0.7 and weights[2] <= 0.05
