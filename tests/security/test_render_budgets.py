"""Linear-time work on untrusted input (issue 34, cases 3 and 5): HTML uploads parsed by lxml, a per-user
extraction budget, render budgets on headings, table cells and spoken lines.

Times are ratios to a plain input of the same size measured in this process, never absolute seconds.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from research import ratelimit
from research.jobs.web.forms import render_budget_problem
from research.knowledge.extract import DocumentRejected, extract_document
from research.render.budgets import render_cost, spoken_line
from research.render.pdf import TOC_MAX_ENTRIES, build_pdf_html
from research.render.podcast_script import podcast_script_from_markdown
from tests.support.costs import cost as _cost

RATIO = 10.0
PLAIN_P = "<p>The market grew 12% in 2024, driven by demand; analysts expect more.</p>\n"




def _html(body: str) -> bytes:
    return ("<!doctype html><html><head><title>T</title></head><body>" + body + "</body></html>").encode()


# Whole files: the reported one is "<html>" and then "</" to the end, no ">" after it.
HTML_ATTACKS: dict[str, Callable[[int], bytes]] = {
    "</ repeated (90-130 s at 1.4 MB)": lambda n: ("<html>" + "</" * (n // 2)).encode(),
    "deep nesting": lambda n: _html("<div>" * (n // 5)),
    "unclosed tags": lambda n: _html("<p><b><i>x" * (n // 10)),
    "unclosed attribute": lambda n: _html('<a href="' + "x" * n),
}


@pytest.mark.parametrize("attack", list(HTML_ATTACKS))
def test_html_extraction_costs_no_more_than_plain_html(attack):
    size = 300_000  # the stdlib parser took ~19 s on "</" at this size, plain HTML ~1 s
    plain = _html((PLAIN_P * (size // len(PLAIN_P) + 1))[:size])
    hostile = HTML_ATTACKS[attack](size)

    def extract(data: bytes) -> Callable[[], object]:
        def run() -> object:
            try:
                return extract_document(filename="page.html", data=data)
            except DocumentRejected:
                return None
        return run

    extract(plain)()  # imports warm
    ratio = _cost(extract(hostile)) / _cost(extract(plain))
    assert ratio < RATIO, f"{attack}: {ratio:.1f}x plain HTML of the same size"


def test_html_extraction_keeps_title_text_and_xhtml_declarations():
    page = b'<?xml version="1.0" encoding="utf-8"?>\n<html><head><title>Heat  pumps</title>' \
           b"<script>var x = 1;</script></head><body><p>Heat pumps move heat.</p><p>They work in cold.</p>" \
           b"</body></html>"
    extracted = extract_document(filename="a.xhtml", data=page)
    assert extracted.title == "Heat pumps"
    assert "Heat pumps move heat." in extracted.text and "var x" not in extracted.text


@pytest.mark.django_db
def test_each_account_has_an_extraction_budget(settings, alice, bob, monkeypatch):
    from research.jobs import dispatch
    from research.knowledge import services

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    settings.KB_USER_EXTRACT_BYTES_PER_H = 1000
    mine = services.collection_create(owner=alice, name="a")
    theirs = services.collection_create(owner=bob, name="b")
    services.document_submit(collection=mine, filename="1.txt", data=b"a" * 600)
    with pytest.raises(DocumentRejected, match="indexing budget"):
        services.document_submit(collection=mine, filename="2.txt", data=b"b" * 600)
    assert mine.documents.count() == 1  # nothing stored for the refused file
    services.document_submit(collection=theirs, filename="3.txt", data=b"c" * 600)  # another account's own


@pytest.mark.django_db
def test_windows_slide_so_no_burst_fits_around_the_edge(monkeypatch):
    """Issue 34 case 2: the hourly window was fixed, so 60 jobs fit around a window edge at 30/h."""
    clock = [3600 * 1000 - 1.0]  # one second before a fixed window would end
    monkeypatch.setattr(ratelimit.time, "time", lambda: clock[0])
    hit = lambda: ratelimit.sliding_window_hit(scope="t", key="k", limit=30, window=3600)  # noqa: E731
    assert all(hit().allowed for _ in range(30)) and not hit().allowed
    clock[0] += 2  # the next fixed window has started: a fixed counter would allow 30 more
    assert not hit().allowed
    clock[0] += 1800  # half the hour has slid past: about half the budget is back
    allowed = sum(hit().allowed for _ in range(30))
    assert 13 <= allowed <= 16, allowed
    refused = hit()
    assert not refused.allowed and 0 < refused.retry_after <= 3600


def test_cost_counts_against_the_window(monkeypatch):
    monkeypatch.setattr(ratelimit.time, "time", lambda: 7200.5)
    assert ratelimit.sliding_window_hit(scope="c", key="k", limit=10, window=3600, cost=7).allowed
    refused = ratelimit.sliding_window_hit(scope="c", key="k", limit=10, window=3600, cost=5)
    assert not refused.allowed  # a heavy job with 5 runs does not fit in the 3 left
    assert ratelimit.sliding_window_hit(scope="c", key="k", limit=10, window=3600, cost=3).allowed


# --- render budgets -----------------------------------------------------------------------------------


def test_an_edit_with_too_many_headings_is_refused_with_the_reason(settings):
    """Issue 34 case 5: 12,000 `## a` headings made the PDF take 152 s."""
    settings.REPORT_MAX_HEADINGS = 300
    assert render_budget_problem("# T\n\n" + "## a\n\n" * 299) == ""
    problem = render_budget_problem("# T\n\n" + "## a\n\n" * 12_000)
    assert "or more headings; at most 300" in problem
    assert render_budget_problem("# T\n\n" + "## a\n\n" * 299 + "## b\n\n")  # 301: over, found exactly
    # Counted by a Markdown parser: "#" in a code block or mid-line is no heading.
    assert render_cost("```\n" + "## a\n" * 500 + "```\n").headings == 0


def test_an_edit_with_a_huge_table_is_refused(settings):
    settings.REPORT_MAX_TABLE_CELLS = 3000
    table = "# T\n\n| a | b |\n|---|---|\n" + "| x | y |\n" * 6000
    assert render_cost(table).table_cells == 12_002
    assert "or more cells; at most 3,000" in render_budget_problem(table)
    assert render_budget_problem("# T\n\n| a | b |\n|---|---|\n" + "| x | y |\n" * 1499) == ""  # 3,000 cells


@pytest.mark.django_db
def test_the_edit_form_refuses_an_over_budget_report(alice_client, alice, monkeypatch):
    from django.urls import reverse

    from research.jobs import dispatch, services
    from research.jobs.models import JobStatus, ResearchJob

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="How big is the market?", options={"engine": "offline"})
    services.report_version_create(job=job, markdown="# R\n\nThe market grew.\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    response = alice_client.post(reverse("job_report_edit", args=[job.pk]), {"markdown": "# T\n\n" + "## a\n\n" * 400})
    assert response.status_code == 400 and "401 or more headings" in response.content.decode()
    assert job.report_versions.count() == 1


def test_the_pdf_table_of_contents_is_capped_and_says_so():
    html = build_pdf_html("# T\n\n" + "".join(f"## Part {n}\n\nText {n}.\n\n" for n in range(200)))
    toc = html[html.index('<nav class="toc">'):html.index("</nav>")]
    assert toc.count("<a href=") == TOC_MAX_ENTRIES
    assert f"140 more sections, not listed (the contents show the first {TOC_MAX_ENTRIES})" in toc


def test_an_unpunctuated_chinese_line_is_not_spoken_as_one_sentence():
    """Issue 34 case 5: 48,000 characters of Chinese without punctuation took the podcast 83.5 s."""
    text = "中文文本" * 12_000
    script = podcast_script_from_markdown(f"# 标题\n\n## 部分\n\n{text}\n", locale="zh-CN")
    assert script.lines and max(len(line.text) for line in script.lines) <= 700
    assert any(line.text.endswith("…") for line in script.lines)


@given(st.text(max_size=2000), st.integers(min_value=10, max_value=700))
def test_a_spoken_line_is_a_shortened_prefix(text, limit):
    out = spoken_line(text, limit)
    assert len(out) <= limit
    if out != text:
        assert out.endswith("…") and text.startswith(out[:-1])


def test_an_edit_full_of_angle_brackets_is_refused_before_rendering():
    """The parser bench: 1M characters of unclosed tags took Markdown → HTML 15x plain prose."""
    from research.jobs.web.forms import MAX_REPORT_ANGLES, report_markdown_problem

    assert report_markdown_problem("# T\n\n" + "a < b. " * MAX_REPORT_ANGLES) == ""
    problem = report_markdown_problem("# T\n\n" + "<p><b><i>x" * 10_000)  # 30,000 "<"
    assert "“<” characters; at most 25000 are accepted" in problem
