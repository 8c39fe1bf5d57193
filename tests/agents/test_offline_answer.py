"""Answers first (issue 32, items 5 and 6): the offline `## Answer` states the key fact a source gives
(the install command), follow-up answers say each sentence once and say so when the sources do not
state the thing asked, heavy runs over a knowledge base differ, and a step with a finding is never
reported as having nothing. Over an in-memory context: no model, no network."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from research.agents.depth import run_variants
from research.agents.engines.offline import OfflineEngine
from research.agents.engines.offline.read import command_facts, command_lead
from research.agents.nodes.followup import offline_answer
from research.agents.types import Plan, PlanStep, SourceRef, StepResult
from research.report.check import report_check
from research.report.citations import citation_numbers
from tests.support.citecheck import check_citations
from tests.support.fake_context import FakeContext, FakePage

# A made-up project's README, as a knowledge base holds it: an editor modeline, a sponsor blurb, the
# install command in a code block and a contributors line.
README = """# Flowq

.. vim: syntax=rst tabstop=4 expandtab

Flowq is a distributed task queue for Python that moves slow work out of web requests.

Flowq is sponsored by Acme Cloud. Acme Cloud offers managed hosting for teams of every size, visit them today.

## Installation

Flowq is published on the Python Package Index and supports Python 3.10 or later.

To install Flowq together with the dependencies for the Redis broker, use the redis bundle:

```bash
pip install "flowq[redis]"
```

The Redis bundle adds the client library that Flowq workers use to talk to the Redis broker.

## Configuration

Workers read the broker address from the FLOWQ_BROKER_URL environment variable when they start.

## Contributors

This project exists thanks to all the people who contribute to it over the years.
"""
QUESTION = "How do I install Flowq with Redis support?"
JUNK = ("vim", "Acme", "sponsored", "contribute")


def kb_context(question: str = QUESTION, pages: list[FakePage] | None = None) -> FakeContext:
    pages = pages or [FakePage("kb://flowq/README.md", "Flowq README", README)]
    return FakeContext(question=question, kb_pages=pages, options={"kb": "flowq", "web": False})


def answer_of(report: str) -> str:
    return report.split("## Answer", 1)[1].split("\n## ", 1)[0]


def test_how_do_i_install_answers_with_the_command_cited_and_no_junk():
    ctx = kb_context()
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=3)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    report = engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
    answer = answer_of(report)
    readme = next(s for s in ctx.sources() if s.url.endswith("README.md"))
    # The command, quoted as code on the line that introduces it in the README, cited to the README.
    line = next(line for line in answer.splitlines() if 'pip install "flowq[redis]"' in line)
    assert line == ("To install Flowq together with the dependencies for the Redis broker, use the redis "
                    f'bundle: `pip install "flowq[redis]"` [{readme.number}]')
    assert not any(word in answer for word in JUNK)
    assert QUESTION.rstrip("?") not in answer  # no restated question: the answer has no label for one part
    # The report's own claim check finds the command's line in its source; the other quotes check out too.
    checked = report_check(report, ctx.sources(), locale="en-US")
    assert checked.claims and checked.flagged == 0 and checked.removed_claims == 0, checked.summary()
    assert line in checked.markdown
    prose = report.replace(line, "")
    assert check_citations(prose, {s.number: s.text for s in ctx.sources()}) == []


def test_a_how_much_part_prefers_the_sentence_with_the_figure():
    page = FakePage("kb://flowq/sizing.md", "Sizing Flowq workers",
                    "Flowq workers are light and start quickly on small machines in most deployments. "
                    "Each Flowq worker uses about 45 megabytes of memory when it is idle and waiting. "
                    "Flowq workers can be scaled out by starting more of them behind the same broker.")
    ctx = kb_context("How much memory does a Flowq worker use?", [page])
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=2)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    answer = answer_of(engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None))
    assert answer.strip().startswith("Each Flowq worker uses about 45 megabytes")


def test_followup_says_each_sentence_once_and_gives_the_command():
    # Two overlapping chunks of the README hold the same sentences under two source numbers.
    half = len(README) // 2
    chunks = [SourceRef(1, "kb://flowq/README.md#1", "Flowq README", README[: half + 400], "kb"),
              SourceRef(2, "kb://flowq/README.md#2", "Flowq README", README[half - 400 :], "kb")]
    body = offline_answer(QUESTION, chunks, "en-US")
    assert 'pip install "flowq[redis]"' in body
    quoted = [s for s in body.replace("\n", " ").split(" [") if len(s) > 30]
    texts = [s.split("] ", 1)[-1].strip() for s in quoted]
    assert len(texts) == len(set(texts))
    for sentence in ("The Redis bundle adds the client library", "Flowq is published on the Python"):
        assert body.count(sentence) <= 1


def test_followup_says_plainly_when_the_sources_do_not_state_it():
    source = SourceRef(1, "kb://flowq/README.md", "Flowq README", README, "kb")
    body = offline_answer("How much memory does a Flowq worker use?", [source], "en-US")
    assert body.startswith("The sources of this report do not state this")
    zh = offline_answer("Flowq 的工作进程占用多少内存？", [source], "zh-CN")
    assert zh.startswith("来源没有直接说明“Flowq 的工作进程占用多少内存”")
    assert "broker. [1] Flowq" in zh  # English quotes keep their space before the marker


def test_heavy_runs_over_a_knowledge_base_differ():
    # The README in chunks, a section each, as the knowledge base splits it: more than one run reads.
    pages = [FakePage(f"kb://flowq/README.md#{i}", "Flowq README", ("## " if i else "") + text)
             for i, text in enumerate(README.split("\n## "))]
    ctx = kb_context(pages=pages)
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=1)
    step = plan.steps[0]
    runs = [engine.research(ctx, step, plan, [], variant=v) for v in run_variants(step, job_id=1, k=3, locale="en-US")]
    read = [tuple(r.notes["sources"]) for r in runs]
    assert len(set(read)) == 3, read  # each run read the chunks in another order, past the anchor's first
    assert len({tuple(r.notes["queries"]) for r in runs}) == 3
    assert len({r.report_md for r in runs}) >= 2  # not three identical runs
    merged = engine.synthesize(ctx, step, plan, runs)
    assert merged.notes["facts"] and merged.notes["facts"][0]["text"] == 'pip install "flowq[redis]"'
    report = engine.report(ctx, plan, [merged], style="academic", on_delta=lambda _: None)
    assert 'pip install "flowq[redis]"' in answer_of(report)


def test_a_part_whose_findings_are_quoted_above_is_never_reported_as_having_nothing():
    question = "What is Flowq and how do I install Flowq?"
    ctx = kb_context(question)
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=2)
    same = "Flowq is a distributed task queue for Python that moves slow work out of web requests."
    ctx.kb_search("Flowq", limit=1)
    results = [StepResult(step.id, step.title, f"- {same} [1]\n", notes={
        "engine": "offline", "sources": [1], "sentences": [{"text": same, "source": 1, "score": 1.0}]})
        for step in plan.steps]
    report = engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
    assert "No source found" not in report and "had nothing" not in report
    assert "The answer above has what the sources say on this." in report


@given(st.lists(st.sampled_from(["pip install flowq", "$ docker run flowq", "Some prose here.", "    make test",
                                 "`uv add flowq` is the other way.", "```", "", "npm i x"]), max_size=12))
def test_command_facts_are_verbatim_lines_of_the_page(lines):
    text = "\n".join(lines)
    for command in command_facts(text):
        assert any(command in line for line in text.splitlines())
        assert command_lead(text, command) == "" or command_lead(text, command) in text


def test_command_facts_find_fenced_indented_prompt_and_inline_commands():
    text = ("Run this:\n\n```\npip install flowq\n```\n\n    docker run flowq\n\n$ make test\n\n"
            "Or use `uv add flowq` instead. A `word` is no command.\n")
    assert command_facts(text) == ["pip install flowq", "docker run flowq", "make test", "uv add flowq"]


def test_an_unanswered_part_and_a_plain_step_in_one_plan_keep_their_citations_registered():
    ctx = kb_context()
    engine = OfflineEngine()
    plan = Plan(title="Flowq", steps=[PlanStep(id="s1", title="Installation", description="install Flowq Redis")])
    result = engine.research(ctx, plan.steps[0], plan, [])
    assert set(citation_numbers(result.report_md)) <= {s.number for s in ctx.sources()}
    assert result.notes["facts"][0]["source"] in {s.number for s in ctx.sources()}


def test_a_closing_fence_joined_to_the_code_line_is_not_part_of_the_command():
    # What the knowledge base's chunker makes of a fenced block: the fence glued to the last line.
    text = 'Use the redis bundle:\n\n```bash\npip install "flowq[redis]" ```\n\nThen start a worker.'
    assert command_facts(text) == ['pip install "flowq[redis]"']
