"""The offline engine reads until a part is covered (issue 32, item 2): its own searches per step, pages
past the top hits when they do not answer, a budget, and "No source found on …" for a part nothing
answers. Over an in-memory context: no model, no network."""

from __future__ import annotations

from research.agents.engines.offline import OfflineEngine
from research.agents.engines.offline.question import Aspect
from research.agents.engines.offline.read import READ_PAGES, part_kind, reader_for, step_queries
from research.jobs.event_types import event_problem
from research.report.citations import citation_numbers
from tests.support.citecheck import check_citations
from tests.support.fake_context import FakeContext, FakePage

# Five pages on the Zorblax licence that never say what it costs; each repeats the question's words,
# so the search ranks them first. The sixth says the price and ranks last.
_TALK = [
    "The Zorblax license question comes up often: how much does a Zorblax license cost, and who needs one?",
    "Teams that ask how much a Zorblax license will cost should first read the terms of the Zorblax license.",
    "The Zorblax license covers every developer who builds with Zorblax in a commercial product.",
    "A Zorblax license also includes access to the private forum where Zorblax developers meet.",
    "Some companies negotiate the Zorblax license cost as part of a larger support contract with the vendor.",
]
TALK = [FakePage(f"https://forum.example.org/zorblax-{i}", f"Zorblax license: how much does it cost? ({i})",
                 f"{text} Zorblax license terms are explained in the Zorblax handbook for each team.")
        for i, text in enumerate(_TALK)]
PRICE = FakePage("https://vendor.example.com/pricing", "Pricing",
                 "A Zorblax license costs 240 dollars per developer and year, billed annually. "
                 "Volume discounts start at 50 developers for every Zorblax customer.")
ABOUT = FakePage("https://vendor.example.com/about", "About Zorblax",
                 "Zorblax is a build system for embedded firmware written by a small team in Oslo. "
                 "Zorblax compiles firmware images for many microcontrollers from one description.")


def read_events(ctx: FakeContext) -> list[dict]:
    return [p for t, p in ctx.events if t == "step.activity" and p.get("kind") == "read_more"]


def run_job(engine: OfflineEngine, ctx: FakeContext, max_steps: int = 2) -> tuple[list, str]:
    plan = engine.plan(ctx, max_steps=max_steps)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    return results, engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)


def test_the_page_that_answers_ranks_sixth_and_is_still_read_and_cited():
    ctx = FakeContext(question="How much does a Zorblax license cost?", pages=[*TALK, PRICE])
    # The search's own order: the five pages that talk about the licence first, the price last.
    assert [h.url for h in ctx.search("Zorblax license cost how much")][-1] == PRICE.url
    engine = OfflineEngine()
    results, report = run_job(engine, ctx, max_steps=1)
    assert ctx.fetched.index(PRICE.url) >= engine.fetch_per_step  # read past the top hits
    price = next(s.number for s in ctx.sources() if s.url == PRICE.url)
    assert price in citation_numbers(report)
    answer = report.split("## Answer", 1)[1].split("\n## ", 1)[0]
    assert "240 dollars" in answer and f"[{price}]" in answer
    assert check_citations(report, {s.number: s.text for s in ctx.sources()}) == []
    # The step said why it read further, in a payload the event schema accepts.
    events = read_events(ctx)
    assert events and "do not answer" in events[0]["reason"]
    for payload in events:
        assert event_problem("step.activity", payload) == ""
    assert results[0].notes["covered"] is True


def test_a_covered_part_reads_no_further():
    # The price page now matches every word of the search, so it is among the first hits.
    top = FakePage(PRICE.url, "Zorblax license: how much does it cost? Pricing overview", PRICE.text)
    ctx = FakeContext(question="How much does a Zorblax license cost?", pages=[top, *TALK])
    engine = OfflineEngine()
    results, _ = run_job(engine, ctx, max_steps=1)
    assert results[0].notes["covered"] and not read_events(ctx)
    assert len(ctx.fetched) <= engine.fetch_per_step


def test_reading_stops_at_the_page_budget_when_nothing_answers():
    many = [FakePage(f"https://forum.example.org/more-{i}", f"Zorblax license thread {i}", page.text)
            for i, page in enumerate(TALK * 4)]
    ctx = FakeContext(question="How much does a Zorblax license cost?", pages=many)
    run_job(OfflineEngine(), ctx, max_steps=1)
    assert READ_PAGES < len(many) and len(set(ctx.fetched)) <= READ_PAGES


def test_a_part_no_source_answers_says_so_on_its_step_and_in_the_report():
    question = "What is Zorblax and how much does a Zorblax license cost?"
    ctx = FakeContext(question=question, pages=[ABOUT, *TALK])
    engine = OfflineEngine()
    results, report = run_job(engine, ctx)
    by_title = {r.title: r for r in results}
    part = next(t for t in by_title if "cost" in t)
    line = "No source found on “How much does a Zorblax license cost”"
    # The step's own report (what its card shows as the finding) names the part …
    assert by_title[part].notes["unanswered"] == part and line in by_title[part].report_md
    # … and so does the report, in the answer and in the part's section; the other part is answered.
    answer = report.split("## Answer", 1)[1].split("\n## ", 1)[0]
    assert line in answer
    first = answer.split("**How much", 1)[0]
    assert "**What is Zorblax?**" in first and citation_numbers(first)
    section = report.split(f"## {part}", 1)[1].split("\n## ", 1)[0]
    assert section.strip() == f"_{line}._"  # only that: nothing from a neighbouring point
    # Nothing about the licence's terms is passed off as its price in the answer.
    assert "forum" not in answer.split("**How much", 1)[1]
    assert check_citations(report, {s.number: s.text for s in ctx.sources()}) == []


def test_each_step_searches_its_own_words_and_no_query_twice():
    question = "What is Zorblax and how much does a Zorblax license cost?"
    ctx = FakeContext(question=question, pages=[ABOUT, *TALK])
    results, _ = run_job(OfflineEngine(), ctx)
    queries = [q for r in results for q in r.notes["queries"]]
    assert len(queries) > len(results)  # the unanswered part searched a variant too
    assert len({frozenset(q.lower().split()) for q in queries}) == len(queries)
    aspect = Aspect("How much does it cost", "cost Zorblax", ("Zorblax", "cost"))
    out = step_queries("cost Zorblax", title="Zorblax cost", aspect=aspect, terms=["Zorblax", "cost"])
    assert out == ["Zorblax cost", "cost Zorblax price figures data"]  # "cost Zorblax" is the same search
    aspect = Aspect("How much does a Zorblax license cost", "Zorblax license cost", ("Zorblax", "license", "cost"))
    out = step_queries("Zorblax license cost", title=aspect.title, aspect=aspect, terms=["Zorblax"])
    assert out == ["How much does a Zorblax license cost", "Zorblax license cost price figures data"]
    # A part whose own words do not name the subject still searches for the subject: never "makes" alone.
    aspect = Aspect("Who makes Quillmate", "makes Quillmate", ("makes",))
    out = step_queries("makes Quillmate", title=aspect.title, aspect=aspect, terms=["Quillmate"])
    assert all("Quillmate" in query for query in out), out


def test_a_new_search_reads_its_own_hits_before_what_earlier_searches_left():
    ctx = FakeContext(question="Zorblax", pages=[*TALK, PRICE, ABOUT])
    reader = reader_for(ctx, 2)
    reader.search("Zorblax license cost how much", 2)
    left = list(reader.pending)
    reader.search("Oslo firmware microcontrollers", 1)
    assert ctx.fetched[-1] == ABOUT.url  # the new search's first hit, before the first search's leftovers
    assert reader.pending == [u for u in left if u != ABOUT.url]
    assert reader.queries == ["Zorblax license cost how much", "Oslo firmware microcontrollers"]


def test_what_a_part_asks_for():
    assert part_kind("How do I install Flowq with Redis support") == "how"
    assert part_kind("How to configure the broker?") == "how"
    assert part_kind("How tough is the competition?") == ""  # "how to" only as whole words
    assert part_kind("How much does a Zorblax license cost") == "much"
    assert part_kind("What does it cost?") == "much"
    assert part_kind("钠离子电池的成本") == "much" and part_kind("如何安装 Flowq？") == "how"
    assert part_kind("What is Zorblax") == ""
    # How it asks comes before what it names: a cost of installing is a figure, not a procedure.
    assert part_kind("How much does a Zorblax heat pump cost to install") == "much"
    assert part_kind("安装一台 Zorblax 热泵要多少钱？") == "much"
    assert part_kind("How do I install Zorblax, and how much disk does it need?") == "how"
    assert part_kind("Which command lists the Zorblax snapshots?") == "how"


# Every page says 费用 and uses 和 and 要; only one says what the fees are. The part asks which fees and risks.
_VANADIUM = [
    FakePage(f"https://energy.example.cn/vrfb-{i}", f"钒液流电池的费用和风险（{i}）", text)
    for i, text in enumerate([
        "钒液流电池划算吗？钒液流电池的费用和寿命要一起看，钒液流电池适合长时储能。",
        "钒液流电池的费用和风险要看项目规模，钒液流电池寿命长达二十年。",
        "钒液流电池要先看费用和电解液，钒液流电池可以循环一万五千次。",
    ])
]


def test_a_part_s_asked_words_keep_what_it_asks_and_drop_grammar_words():
    # 费用 is on every page, but it is what the part asks about the subject, never the subject itself; 和,
    # 要 and 哪些 are in nearly every Chinese sentence and would let any sentence cover the part.
    ctx = FakeContext(question="钒液流电池划算吗，要注意哪些费用和风险？", pages=_VANADIUM, locale="zh-CN")
    results, _ = run_job(OfflineEngine(), ctx, max_steps=3)
    fees, risks = (set(r.notes.get("asked") or []) for r in results[1:3])  # 哪些费用和风险: a part each
    assert "费用" in fees and "风险" in risks, (fees, risks)
    assert not (fees | risks) & {"和", "要", "哪些", "吗", "的"}, (fees, risks)
