"""Every report the render tests use: the fixture reports and real offline-engine reports (English and Chinese)."""

from __future__ import annotations

from functools import lru_cache

from research.agents.engines.offline import OfflineEngine
from research.report.citations import finalize_report
from tests.render.conftest import EN_REPORT, ZH_REPORT
from tests.support.fake_context import FakeContext, FakePage

QUESTIONS = (
    ("How cheap has solar power become and what limits it?", "en-US"),
    ("中国新能源汽车的发展现状如何？", "zh-CN"),
)


def offline_report(question: str, locale: str) -> str:
    """A whole offline-engine job over the shared test site's articles, references appended as in production."""
    from tests.support import site

    pages = [FakePage(f"https://site.test{p.path}", p.title, p.text) for p in site.PAGES if p.kind == "html"]
    ctx = FakeContext(question=question, pages=pages, locale=locale)
    engine = OfflineEngine()
    plan = engine.plan(ctx, max_steps=5)
    results = [engine.research(ctx, step, plan, []) for step in plan.steps]
    report = engine.report(ctx, plan, results, style="academic", on_delta=lambda _: None)
    return finalize_report(report, ctx.sources(), locale=locale).markdown


@lru_cache(maxsize=1)
def all_reports() -> dict[str, str]:
    reports = {"fixture-en": EN_REPORT, "fixture-zh": ZH_REPORT}
    for question, locale in QUESTIONS:
        reports[f"offline-{locale}"] = offline_report(question, locale)
    return reports
