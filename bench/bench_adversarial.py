"""Adversarial text: each request and task path on 500,000-character attacks against a plain input.

Issue #25's rule: no input of up to 500k characters makes any request or task take more than 10x a
plain input of the same size. Each path below gets the attacks (the reported ones among them) and an
English prose input of the same length, in this process, one after the other; the result is the ratio
(attack / plain), the target is <= 10. Requests go through Django's test client against the stack's
database (in process, so the time is the server's work, not the network's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Not a request or task path: markdown-it on any text, without the edit form's caps (shown, not judged).
RAW_RENDER = "Markdown → HTML of any text (no edit caps; reference)"
PLAIN = "The market grew 12% in 2024 [1], driven by demand (see Table 2); analysts expect more.\n"
TARGET = 10.0


def _grow(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


ATTACKS: dict[str, Callable[[int], str]] = {
    "B1: ( and blanks": lambda n: "# T\n\n(" + " " * (n - 7) + "x",
    "B1: [a]( repeated": lambda n: _grow("[a](", n),
    "B1: <http:// repeated": lambda n: _grow("<http://", n),
    "B2: # a, blanks, b": lambda n: "# a" + " " * (n - 5) + "b\n",
    "closing #s": lambda n: "# a" + _grow(" #", n - 5) + "b\n",
    "<think> openers": lambda n: _grow("<think>", n),
    "<tool_call> openers": lambda n: _grow("<tool_call>", n),
    "latin run in Chinese (tts)": lambda n: "中文" + _grow("a1 ", n - 2),
    "footnotes (rank)": lambda n: _grow("[1]", n - 1) + "x",
    "citation openers": lambda n: _grow("[1, ", n),
    "emphasis": lambda n: _grow("*a_", n),
    "unclosed tag with =": lambda n: "<a " + "=" * (n - 4) + "<",
    "one long word": lambda n: "a" * n,
    "dots": lambda n: "." * n,
    "Chinese, no breaks": lambda n: _grow("中文文本", n),
}


def _time(func: Callable[[], object]) -> float:
    started = time.perf_counter()
    func()
    return time.perf_counter() - started


def _paths(stack: Any) -> dict[str, Callable[[str], object]]:
    from django.test import Client
    from django.test.utils import override_settings

    from research.agents.rank import split_sentences
    from research.agents.types import SourceRef
    from research.jobs import services
    from research.jobs.models import JobStatus, ResearchJob, Source
    from research.jobs.web.forms import report_markdown_problem
    from research.knowledge.extract import DocumentRejected, extract_document
    from research.knowledge.text import chunk_text
    from research.llm.parsing import parse_tool_call_tags, split_reasoning
    from research.render.html import markdown_to_html
    from research.render.podcast_script import podcast_script_from_markdown
    from research.render.tts import speech_segments
    from research.report.check import report_check

    user = stack.user()
    job = services.job_create(user=user, question="How big is the market?", options={"engine": "offline"})
    Source.objects.create(job=job, number=1, url="https://a.example/m", title="M",
                          text="The market grew 12% in 2024.", text_hash="x")
    services.report_version_create(job=job, markdown="# R\n\nThe market grew 12% in 2024 [1].\n", author="reporter")
    ResearchJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    job.refresh_from_db()
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    sources = [SourceRef(number=1, url="https://a.example/m", title="M", text="The market grew 12% in 2024.",
                         kind="web")]
    unlimited = override_settings(REPORT_EDIT_RATE="1000000/h")

    def edit(text: str) -> object:
        with unlimited:
            response = client.post(f"/jobs/{job.pk}/report/edit/", {"markdown": text})
        # Saved (302, at once or handed to a worker) or refused before rendering (400: too many "[").
        assert response.status_code == 302 or b"are accepted" in response.content, response.status_code
        return response

    def preview(text: str) -> object:
        response = client.post(f"/jobs/{job.pk}/report/preview/", {"markdown": text})
        assert response.status_code == 200, response.status_code
        return response

    def extract(text: str) -> object:
        try:
            return extract_document(filename="upload.md", data=text.encode())
        except DocumentRejected:
            return None

    return {
        "report edit request (POST)": edit,
        "live preview request (POST)": preview,
        "report check (worker task)": lambda text: report_check(text, sources, locale="en-US"),
        "Markdown upload extraction (worker task)": extract,
        "knowledge chunking (worker task)": lambda text: chunk_text(text),
        # What a report version reaches: an edit passes report_markdown_problem first (the "[" and "*"/"_" caps).
        "Markdown → HTML of an accepted edit (job page, render)": lambda text: report_markdown_problem(text) or
        markdown_to_html(text, figure_url=lambda name: "/f/" + name),
        RAW_RENDER: lambda text: markdown_to_html(text, figure_url=lambda name: "/f/" + name),
        "podcast script (render)": lambda text: podcast_script_from_markdown(text),
        "TTS text preparation (render)": lambda text: speech_segments(text, "zh-CN"),
        "sentence split for ranking (step)": lambda text: split_sentences(text),
        "model output: think / tool-call tags": lambda text: (split_reasoning(text), parse_tool_call_tags(text)),
    }


def run(stack: Any, *, size: int = 500_000, only_paths: list[str] | None = None,
        parser_sizes: tuple[int, ...] = ()) -> dict[str, Any]:
    paths = _paths(stack)
    plain = _grow(PLAIN, size)
    # A path that does next to nothing with plain text (no tags to parse) is compared with one pass
    # over it instead: splitting it into words.
    floor = min(_time(lambda: [line.split() for line in plain.splitlines()]) for _ in range(3))
    rows: list[dict[str, Any]] = []
    for path, func in paths.items():
        if only_paths and path not in only_paths:
            continue
        func(plain[:1000])  # imports and caches warm
        base = max(floor, min(_time(lambda f=func: f(plain)) for _ in range(2)))
        for attack, make in ATTACKS.items():
            text = make(size)
            cost = _time(lambda f=func, t=text: f(t))
            rows.append({"path": path, "attack": attack, "chars": len(text), "seconds": round(cost, 4),
                         "plain_seconds": round(base, 4), "ratio": round(cost / base, 2)})
    judged = [r for r in rows if r["path"] != RAW_RENDER]
    worst = max(judged, key=lambda r: r["ratio"])
    result = {"size": size, "target_ratio": TARGET, "floor_seconds": round(floor, 4), "rows": rows, "worst": worst,
              "within_target": all(r["ratio"] <= TARGET for r in judged)}
    if parser_sizes:
        result["parsers"] = run_parsers(sizes=parser_sizes)
    return result


# --- Parsers and renders (issue 34): HTML uploads, render budgets, podcast, at 100k and 1M characters ------

PLAIN_HTML = "<p>The market grew 12% in 2024, driven by demand; analysts expect more.</p>\n"


def _page(body: str) -> str:
    return "<!doctype html><html><head><title>T</title></head><body>" + body + "</body></html>"


PARSER_ATTACKS: dict[str, Callable[[int], str]] = {
    "</ repeated (html.parser: 90-130 s at 1.4 MB)": lambda n: "<html>" + "</" * ((n - 6) // 2),
    "deep nesting": lambda n: _grow("<div>", n),
    "unclosed tags": lambda n: _grow("<p><b><i>x", n),
    "many headings": lambda n: "# T\n\n" + _grow("## a\n\n", n - 5),
    "big table": lambda n: "# T\n\n| a | b |\n|---|---|\n" + _grow("| x | y |\n", n - 26),
    "Chinese, no sentence punctuation": lambda n: "# 标题\n\n## 部分\n\n" + _grow("中文文本", n - 13),
}


def _parser_paths() -> dict[str, tuple[Callable[[str], object], Callable[[int], str]]]:
    """Each path with its plain input of a given size (HTML for the extractor, prose for the rest)."""
    from research.jobs.web.forms import report_markdown_problem
    from research.knowledge.extract import DocumentRejected, extract_document
    from research.render.html import markdown_to_html
    from research.render.pdf import build_pdf_html
    from research.render.podcast_script import podcast_script_from_markdown
    from research.render.tts import speech_segments

    def extract(text: str) -> object:
        try:
            return extract_document(filename="upload.html", data=text.encode())
        except DocumentRejected:
            return None

    # The edit check (caps and render budgets) is timed with what follows it: alone, on plain prose, it is a
    # couple of str.count calls, and its refusal costs a bounded parse (a prefix just over the budget).
    def accepted_html(text: str) -> object:
        # What a report version reaches: an edit over a budget is refused (with the reason) before rendering.
        return report_markdown_problem(text) or markdown_to_html(text, figure_url=lambda name: "/f/" + name)

    def accepted_pdf_html(text: str) -> object:  # the PDF's HTML with its capped contents (not WeasyPrint)
        return report_markdown_problem(text) or build_pdf_html(text, with_figures=False)

    def podcast(text: str) -> object:  # of an accepted edit, like the two above
        if report_markdown_problem(text):
            return None
        script = podcast_script_from_markdown(text)
        return [speech_segments(line.text, script.locale) for line in script.lines]

    # Prose without "[": at 1M characters PLAIN's citations pass the edit form's 10,000-"[" cap, and a
    # refused plain input would be no baseline.
    prose: Callable[[int], str] = lambda n: "# T\n\n" + _grow(PLAIN.replace(" [1]", ""), n - 5)  # noqa: E731
    return {
        "HTML upload extraction (worker task)": (extract, lambda n: _page(_grow(PLAIN_HTML, n - 60))),
        "Markdown → HTML of an accepted edit (render)": (accepted_html, prose),
        "PDF document HTML with contents (render)": (accepted_pdf_html, prose),
        "podcast script + TTS text of an accepted edit (render)": (podcast, prose),
    }


def run_parsers(*, sizes: tuple[int, ...] = (100_000, 1_000_000)) -> dict[str, Any]:
    """Every parser/render path on each attack, against its plain input of the same size (ratio <= 10)."""
    rows: list[dict[str, Any]] = []
    for size in sizes:
        for path, (func, plain_of) in _parser_paths().items():
            plain = plain_of(size)
            func(plain[:2000])  # imports and caches warm
            floor = _time(lambda t=plain: [line.split() for line in t.splitlines()])
            base = max(floor, min(_time(lambda f=func, t=plain: f(t)) for _ in range(2)))
            for attack, make in PARSER_ATTACKS.items():
                text = make(size)
                cost = _time(lambda f=func, t=text: f(t))
                rows.append({"path": path, "attack": attack, "chars": len(text), "seconds": round(cost, 4),
                             "plain_seconds": round(base, 4), "ratio": round(cost / base, 2)})
    worst = max(rows, key=lambda r: r["ratio"])
    return {"sizes": list(sizes), "target_ratio": TARGET, "rows": rows, "worst": worst,
            "within_target": all(r["ratio"] <= TARGET for r in rows)}


def table(result: dict[str, Any]) -> list[tuple[str, str]]:
    by_path: dict[str, list[dict[str, Any]]] = {}
    for row in result["rows"]:
        by_path.setdefault(row["path"], []).append(row)
    out = []
    for path, rows in by_path.items():
        worst = max(rows, key=lambda r: r["ratio"])
        out.append((path, f"worst {worst['ratio']:.2f}× plain ({worst['attack']}: {worst['seconds']:.3f} s "
                          f"against {worst['plain_seconds']:.3f} s)"))
    out.append(("all paths within ≤ 10×", "yes" if result["within_target"] else "NO"))
    parsers = result.get("parsers")
    if parsers:
        worst = parsers["worst"]
        out.append((f"parsers and renders at {', '.join(f'{n:,}' for n in parsers['sizes'])} characters",
                    f"worst {worst['ratio']:.2f}× plain ({worst['path']}, {worst['attack']}, {worst['chars']:,})"))
        out.append(("parsers and renders within ≤ 10×", "yes" if parsers["within_target"] else "NO"))
    return out
