"""`make eval`: research questions over a local corpus, through the real job path, per engine.

    .venv/bin/python bench/eval/run.py                      # all questions, both engines
    .venv/bin/python bench/eval/run.py --only ssb-limits-en --engines offline --out /tmp/e.json

Starts the benchmark stack (bench/harness.py: SQLite, embedded Redis, a real Celery worker) with
the evaluation corpus (bench/eval/pages) as the web search provider and site, runs every question
as a job with each engine, scores the final reports (bench/eval/metrics.py), prints a table and
writes the `eval` section of bench/results.json (other sections are kept).

The `llm` engine runs against tests/support/fake_llm.py playing tests/support/scenario.py: a
scripted stand-in that quotes the first sentences of the pages it fetched. Its figures measure the
pipeline around the model (citation handling, verification, link removal), not a model's skill.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.eval.metrics import Scores, score_report  # noqa: E402
from bench.harness import Stack, machine  # noqa: E402

QUESTIONS_FILE = Path(__file__).resolve().parent / "questions.json"
DEFAULT_OUT = ROOT / "bench" / "results.json"
ENGINES = ("offline", "llm")
STAND_IN = "llm = tests/support/fake_llm.py playing tests/support/scenario.py (a scripted stand-in, not a model)"


def load_questions(only: list[str] | None = None) -> list[dict[str, Any]]:
    questions = json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))["questions"]
    if only:
        unknown = sorted(set(only) - {q["id"] for q in questions})
        if unknown:
            raise SystemExit(f"unknown question id(s): {', '.join(unknown)}")
        questions = [q for q in questions if q["id"] in only]
    return questions


def _job_report(job_id: int) -> tuple[str, list[Any], str]:
    from research.agents.types import SourceRef
    from research.jobs.models import ResearchJob

    job = ResearchJob.objects.get(pk=job_id)
    version = job.report_versions.order_by("-number").first()
    sources = [SourceRef(s.number, s.url, s.title, s.text, s.kind) for s in job.sources.order_by("number")]
    return (version.markdown if version else ""), sources, job.status


def run_eval(
    *, questions: list[dict[str, Any]], engines: tuple[str, ...] = ENGINES, max_steps: int = 5, verbose: bool = True
) -> dict[str, Any]:
    """Run every question with every engine; returns the `eval` results section."""
    started = time.monotonic()
    stack = Stack(server=ROOT / "bench" / "eval" / "server.py", verbose=verbose).start()
    try:
        stack.ensure_workers(count=1, concurrency=2)
        from research.jobs import services

        jobs: dict[tuple[str, str], int] = {}
        for engine in engines:
            for q in questions:
                job = services.job_create(
                    user=stack.user(),
                    question=q["question"],
                    options={"engine": engine, "auto_accept": True, "max_steps": max_steps, "locale": q["locale"]},
                )
                jobs[(engine, q["id"])] = int(job.pk)
        stack.wait_jobs(list(jobs.values()), timeout=900)
        per_question: dict[str, dict[str, Any]] = {}
        reports: dict[str, str] = {}
        for (engine, qid), job_id in jobs.items():
            q = next(x for x in questions if x["id"] == qid)
            markdown, sources, status = _job_report(job_id)
            scores = score_report(markdown, sources, q) if status == "done" else Scores(facts=[False] * len(q["facts"]))
            row = scores.as_dict() | {"status": status, "sources": len(sources)}
            per_question.setdefault(engine, {})[qid] = row
            reports[f"{engine}/{qid}"] = markdown
    finally:
        stack.stop()
    engines_out: dict[str, Any] = {}
    for engine, rows in per_question.items():
        values = list(rows.values())
        found = sum(r["facts_found"] for r in values)
        total = sum(r["facts"] for r in values)
        cited = sum(r["cited_sentences"] - r["unchecked"] for r in values)
        supported = sum(r["supported"] for r in values)
        engines_out[engine] = {
            "fact_recall": round(found / total, 3) if total else 0.0,
            "citation_support": round(supported / cited, 3) if cited else None,
            "unretrieved_urls": sum(r["unretrieved_urls"] for r in values),
            "answer_first": f"{sum(r['answer_first'] for r in values)}/{len(values)}",
            "failed_jobs": sum(r["status"] != "done" for r in values),
            "questions": rows,
        }
    return {
        "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "wall_s": round(time.monotonic() - started, 1),
        "questions": len(questions),
        "note": STAND_IN,
        "engines": engines_out,
        "_reports": reports,
    }


def print_table(section: dict[str, Any]) -> None:
    head = f"{'engine':8} {'question':18} {'facts':>7} {'support':>8} {'bad urls':>8} {'answer 1st':>10}"
    print(f"\nResearch quality ({section['questions']} questions; {section['note']})\n{head}\n{'-' * len(head)}")
    for engine, data in section["engines"].items():
        for qid, r in data["questions"].items():
            support = "n/a" if r["citation_support"] is None else f"{r['citation_support']:.0%}"
            print(
                f"{engine:8} {qid:18} {r['facts_found']:>3}/{r['facts']:<3} {support:>8} "
                f"{r['unretrieved_urls']:>8} {'yes' if r['answer_first'] else 'no':>10}"
                + ("" if r["status"] == "done" else f"  ({r['status']})")
            )
        support = "n/a" if data["citation_support"] is None else f"{data['citation_support']:.0%}"
        print(
            f"{engine:8} {'ALL':18} {data['fact_recall']:>7.0%} {support:>8} {data['unretrieved_urls']:>8} "
            f"{data['answer_first']:>10}\n"
        )
    sys.stdout.flush()


def write_section(section: dict[str, Any], out: Path) -> None:
    results = json.loads(out.read_text()) if out.exists() else {}
    results["eval"] = {k: v for k, v in section.items() if not k.startswith("_")}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated question ids")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results file (default bench/results.json)")
    parser.add_argument("--reports", default="", help="also write each final report into this directory")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    questions = load_questions([s for s in args.only.split(",") if s])
    engines = tuple(e for e in args.engines.split(",") if e)
    section = run_eval(questions=questions, engines=engines, verbose=not args.quiet)
    print_table(section)
    if args.reports:
        folder = Path(args.reports)
        for name, markdown in section["_reports"].items():
            path = folder / f"{name}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(markdown)
    write_section(section, Path(args.out))
    print(f"wrote the eval section of {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
