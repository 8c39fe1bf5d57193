"""The offline report's opening answer is about what the question asks about, never a neighbouring page's topic.

A search over the test site returns neighbouring pages (solar PV next to electric cars, home batteries
next to rooftop solar) whose sentences can outscore the on-topic ones. Every quoted answer sentence,
or the title of the page it quotes, must name the question's subject.
"""

from __future__ import annotations

import re

import pytest

from research.agents.engines.offline import OfflineEngine
from tests.support import site
from tests.support.fake_context import FakeContext, FakePage

# (question, locale, words of which the sentence or its page's title must hold one)
CASES = [
    ("中国新能源汽车的发展现状如何？", "zh-CN", ("新能源汽车", "电动汽车", "汽车")),
    ("中国光伏装机的现状如何？", "zh-CN", ("光伏",)),
    ("How cheap has solar power become and what limits it?", "en-US", ("solar",)),
    ("How well do heat pumps work in cold climates?", "en-US", ("heat pump",)),
    ("What are grid-scale batteries used for?", "en-US", ("batter",)),
]


def answer_lines(report: str) -> list[str]:
    match = re.search(r"^## (?:Answer|答案)\n\n(.*?)(?=\n## |\Z)", report, re.S | re.M)
    assert match, report[:400]
    return [line for line in match.group(1).splitlines() if line.strip() and not line.startswith("**")]


@pytest.mark.parametrize(("question", "locale", "subject"), CASES, ids=[c[0][:24] for c in CASES])
def test_answer_sentences_are_about_the_questions_subject(question: str, locale: str, subject: tuple[str, ...]):
    pages = [FakePage(f"https://site.test{p.path}", p.title, p.text) for p in site.PAGES if p.kind == "html"]
    ctx = FakeContext(question=question, pages=pages, locale=locale)
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    report = engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
    titles = {ref.number: ref.title for ref in ctx.sources()}
    lines = answer_lines(report)
    assert lines, report[:600]
    for line in lines:
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", line)]
        assert cited, line
        text = " ".join([line, *(titles[n] for n in cited)]).lower()
        assert any(word in text for word in subject), (line, [titles[n] for n in cited])
