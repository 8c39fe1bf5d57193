"""`make eval`: research questions over a local corpus, through the real job path, per engine.

    .venv/bin/python bench/eval/run.py                      # dev and test questions, every engine row
    .venv/bin/python bench/eval/run.py --split dev --engines offline --out /tmp/e.json   # while tuning
    .venv/bin/python bench/eval/run.py --split final        # final readings only, logged (docs/quality.md)

Starts the benchmark stack (bench/harness.py: SQLite, embedded Redis, a real Celery worker) with
the evaluation corpus (bench/eval/pages) as the web search provider and site, runs every question
as a job with each engine, scores the final reports (bench/eval/metrics.py), prints a table and
writes the `eval` section of bench/results.json (other sections are kept): per engine row of
bench/eval/engines.json and per split, `eval.<row>.<split>` (dev, test, holdout, unseen, blind), each with
recall, support and the share of cited sentences taken from near-miss pages, also per language
(`eval.<row>.<split>.by_language.{en,zh}`).

Splits: `dev` is tuned on, `test` is held out, `holdout` was written after the heavy-mode tuning,
`unseen` (bench/eval/questions_fresh.json) and `blind` (bench/eval/questions_blind.json) were written
by someone who never read the engine code; these three run only for final readings. A plain run
(`--split all`) runs dev and test; the others run only when named (`--split holdout|unseen|blind`,
or `--split final` for every split). Every run that reads test, holdout, unseen or blind questions
appends one line to bench/eval/readings.log (tracked).
Questions come from every bench/eval/questions*.json.

The `llm` engine runs against tests/support/fake_llm.py playing tests/support/scenario.py: a
scripted stand-in that quotes the first sentences of the pages it fetched. Its figures measure the
pipeline around the model (citation handling, verification, link removal), not a model's skill.
"""

from __future__ import annotations

import argparse
import json
import subprocess
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

EVAL_DIR = Path(__file__).resolve().parent
ENGINES_FILE = EVAL_DIR / "engines.json"
READINGS_LOG = EVAL_DIR / "readings.log"
DEFAULT_OUT = ROOT / "bench" / "results.json"
SPLITS = ("dev", "test", "holdout", "unseen", "blind")
# What `--split all` (and `make eval`) runs: holdout, unseen and blind are only run when named, for final readings.
ROUTINE_SPLITS = ("dev", "test")
# Reading any of these is logged (READINGS_LOG): only dev may be looked at while tuning.
LOGGED_SPLITS = ("test", "holdout", "unseen", "blind")
LANGUAGES = ("en", "zh")
STAND_IN = "llm = tests/support/fake_llm.py playing tests/support/scenario.py (a scripted stand-in, not a model)"


def splits_for(choice: str) -> tuple[str, ...]:
    """The splits `--split <choice>` runs: `all` is the routine run (dev and test), never holdout or unseen;
    `final` is every split in one run, for a logged final reading."""
    return ROUTINE_SPLITS if choice == "all" else SPLITS if choice == "final" else (choice,)


def question_files(directory: Path = EVAL_DIR) -> list[Path]:
    """questions.json and every other questions*.json (questions_fresh.json holds the unseen split)."""
    return sorted(directory.glob("questions*.json"))


def load_questions(
    only: list[str] | None = None, splits: tuple[str, ...] = SPLITS, *, directory: Path = EVAL_DIR
) -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = []
    for file in question_files(directory):
        questions += json.loads(file.read_text(encoding="utf-8"))["questions"]
    ids = [q["id"] for q in questions]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SystemExit(f"question id(s) given twice in {directory}: {', '.join(duplicates)}")
    unknown_splits = sorted({q["split"] for q in questions} - set(SPLITS))
    if unknown_splits:
        raise SystemExit(f"unknown split(s) {', '.join(unknown_splits)}: known are {', '.join(SPLITS)}")
    if only:
        unknown = sorted(set(only) - {q["id"] for q in questions})
        if unknown:
            raise SystemExit(f"unknown question id(s): {', '.join(unknown)}")
        return [q for q in questions if q["id"] in only]
    return [q for q in questions if q["split"] in splits]


def load_engines(names: list[str] | None = None) -> list[dict[str, Any]]:
    """The engine rows of bench/eval/engines.json, in file order, or the ones named."""
    rows = json.loads(ENGINES_FILE.read_text(encoding="utf-8"))["engines"]
    if not names:
        return rows
    known = {r["name"]: r for r in rows}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown engine row(s): {', '.join(unknown)} (see {ENGINES_FILE.name})")
    return [known[n] for n in names]


def _job_report(job_id: int) -> tuple[str, list[Any], str]:
    from research.agents.types import SourceRef
    from research.jobs.models import ResearchJob

    job = ResearchJob.objects.get(pk=job_id)
    version = job.report_versions.order_by("-number").first()
    sources = [SourceRef(s.number, s.url, s.title, s.text, s.kind) for s in job.sources.order_by("number")]
    return (version.markdown if version else ""), sources, job.status


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def summarize(rows: list[dict[str, Any]], *, by_language: bool = True) -> dict[str, Any]:
    """The figures of one engine over one split's questions (and over each language's questions)."""
    found = sum(r["facts_found"] for r in rows)
    total = sum(r["facts"] for r in rows)
    cited = sum(r["cited_sentences"] - r["unchecked"] for r in rows)
    supported = sum(r["supported"] for r in rows)
    first = sum(bool(r["answer_first"]) for r in rows)
    claims = sum(r["cited_sentences"] for r in rows)
    near_miss = sum(r["near_miss_cited_count"] for r in rows)
    off_subject = sum(r["off_subject_cited_count"] for r in rows)
    out = {
        "questions": len(rows),
        "fact_recall": round(found / total, 3) if total else 0.0,
        "facts_found": f"{found}/{total}",
        "citation_support": round(supported / cited, 3) if cited else None,
        "unretrieved_urls": sum(r["unretrieved_urls"] for r in rows),
        "uncited_unsupported": sum(r["uncited_unsupported"] for r in rows),
        "answer_first": round(first / len(rows), 3) if rows else 0.0,
        "answer_first_count": f"{first}/{len(rows)}",
        "failed_jobs": sum(r["status"] != "done" for r in rows),
        # Shares of all cited sentences (None when the reports cite nothing), with the counts.
        "near_miss_cited": _share(near_miss, claims),
        "near_miss_cited_count": f"{near_miss}/{claims}",
        "off_subject_cited": _share(off_subject, claims),
        "off_subject_cited_count": f"{off_subject}/{claims}",
    }
    if by_language:
        out["by_language"] = {}
        for lang in LANGUAGES:
            chosen = [r for r in rows if r["lang"] == lang]
            if chosen:
                part = summarize(chosen, by_language=False)
                out["by_language"][lang] = {k: part[k] for k in (
                    "questions", "fact_recall", "facts_found", "citation_support", "near_miss_cited",
                    "near_miss_cited_count", "off_subject_cited")}
    return out


def compare(rows: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]], split: str) -> dict[str, Any]:
    """A row against its baseline row (heavy against standard) over one split's questions run by both:
    facts gained in all, and on how many questions it found more, or fewer, facts."""
    both = [q for q, r in rows.items() if r["split"] == split and q in baseline]
    diffs = [rows[q]["facts_found"] - baseline[q]["facts_found"] for q in both]
    return {"questions": len(both), "facts_gained": sum(diffs), "questions_better": sum(d > 0 for d in diffs),
            "questions_worse": sum(d < 0 for d in diffs)}


def run_eval(
    *,
    questions: list[dict[str, Any]],
    engines: list[dict[str, Any]] | None = None,
    max_steps: int = 5,
    verbose: bool = True,
) -> dict[str, Any]:
    """Run every question with every engine row; returns the `eval` results section."""
    engines = engines if engines is not None else load_engines()
    started = time.monotonic()
    stack = Stack(server=ROOT / "bench" / "eval" / "server.py", verbose=verbose).start()
    try:
        stack.ensure_workers(count=1, concurrency=2)
        from research.jobs import services

        jobs: dict[tuple[str, str], int] = {}
        for row in engines:
            for q in questions:
                options = {"auto_accept": True, "max_steps": max_steps, "locale": q["locale"]}
                options |= row.get("options", {}) | {"engine": row["engine"]}
                job = services.job_create(user=stack.user(), question=q["question"], options=options)
                jobs[(row["name"], q["id"])] = int(job.pk)
        # All jobs are queued at once and one worker drains them: the wait grows with their number (the
        # four rows of `--split final`, 304 jobs, ran past a fixed 30 minutes on a 2-core machine), and a job
        # that finishes extends it (184 offline jobs once dev grew to 44 questions ran past 12 s a job).
        stack.wait_jobs(list(jobs.values()), timeout=max(1800, 12 * len(jobs)), stall=900)
        per_question: dict[str, dict[str, Any]] = {}
        reports: dict[str, str] = {}
        for (name, qid), job_id in jobs.items():
            q = next(x for x in questions if x["id"] == qid)
            markdown, sources, status = _job_report(job_id)
            scores = score_report(markdown, sources, q) if status == "done" else Scores(facts=[False] * len(q["facts"]))
            row = scores.as_dict() | {"split": q["split"], "lang": q["locale"][:2], "status": status,
                                      "sources": len(sources)}
            per_question.setdefault(name, {})[qid] = row
            reports[f"{name}/{qid}"] = markdown
    finally:
        stack.stop()
    section: dict[str, Any] = {
        "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "wall_s": round(time.monotonic() - started, 1),
        "questions": {split: sum(q["split"] == split for q in questions) for split in SPLITS},
        "note": STAND_IN + "; test questions are held out: never looked at while tuning; holdout and unseen"
        " questions are run only for final readings",
        "engines": [row["name"] for row in engines],
    }
    for row in engines:
        rows = per_question.get(row["name"], {})
        out: dict[str, Any] = {"engine": row["engine"], "options": row.get("options", {})}
        if row.get("stand_in"):
            out["stand_in"] = True
        for split in SPLITS:
            split_rows = [r for r in rows.values() if r["split"] == split]
            if split_rows:
                out[split] = summarize(split_rows)
        out["per_question"] = rows
        base = row.get("baseline")
        if base in per_question:
            for split in SPLITS:
                if split in out:
                    out[split]["vs_baseline"] = {"baseline": base} | compare(rows, per_question[base], split)
        section[row["name"]] = out
    section["_reports"] = reports
    return section


def _pct(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}%}"


def print_table(section: dict[str, Any], *, per_question: bool = True) -> None:
    head = (
        f"{'engine':14} {'split':7} {'question':20} {'facts':>7} {'support':>8} {'near-miss':>9} {'off-subj':>8} "
        f"{'bad urls':>8} {'uncited':>7} {'answer 1st':>10}"
    )
    print(f"\nResearch quality ({section['questions']}; {section['note']})\n{head}\n{'-' * len(head)}")
    for name in section["engines"]:
        data = section[name]
        if per_question:
            for qid, r in data["per_question"].items():
                first = "yes" if r["answer_first"] else "no"
                print(
                    f"{name:14} {r['split']:7} {qid:20} {r['facts_found']:>3}/{r['facts']:<3} "
                    f"{_pct(r['citation_support']):>8} {r['near_miss_cited_count']:>4}/{r['cited_sentences']:<4} "
                    f"{r['off_subject_cited_count']:>3}/{r['cited_sentences']:<4} {r['unretrieved_urls']:>8} "
                    f"{r['uncited_unsupported']:>7} "
                    f"{first:>10}" + ("" if r["status"] == "done" else f"  ({r['status']})")
                )
        for split in SPLITS:
            if split not in data:
                continue
            s = data[split]
            print(
                f"{name:14} {split:7} {'ALL':20} {s['fact_recall']:>7.0%} {_pct(s['citation_support'], 1):>8} "
                f"{_pct(s['near_miss_cited'], 1):>9} {_pct(s['off_subject_cited'], 1):>8} "
                f"{s['unretrieved_urls']:>8} {s['uncited_unsupported']:>7} {s['answer_first_count']:>10}"
            )
            for lang, part in s.get("by_language", {}).items():
                label = f"ALL {lang} ({part['questions']} q)"
                print(
                    f"{name:14} {split:7} {label:20} {part['fact_recall']:>7.0%} "
                    f"{_pct(part['citation_support'], 1):>8} {_pct(part['near_miss_cited'], 1):>9}"
                )
            versus = s.get("vs_baseline")
            if versus:
                print(f"{name:14} {split:7} {'vs ' + versus['baseline']:20} {versus['facts_gained']:>+7} facts, "
                      f"{versus['questions_better']} questions better, {versus['questions_worse']} worse")
        print()
    sys.stdout.flush()


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def logged_splits(questions: list[dict[str, Any]]) -> list[str]:
    """The splits of these questions whose reading must be logged (all but dev), in SPLITS order."""
    ran = {q["split"] for q in questions}
    return [s for s in LOGGED_SPLITS if s in ran]


def reading_line(section: dict[str, Any], *, commit: str, dirty: bool) -> dict[str, Any]:
    """One line of the readings log: when, at which commit, which splits and rows, the headline figures."""
    splits = [s for s in SPLITS if section["questions"].get(s)]
    figures: dict[str, Any] = {}
    for name in section["engines"]:
        for split in splits:
            s = section[name].get(split)
            if s is None:
                continue
            figures.setdefault(name, {})[split] = {
                "fact_recall": s["fact_recall"],
                "citation_support": s["citation_support"],
                "near_miss_cited": s["near_miss_cited"],
                "off_subject_cited": s["off_subject_cited"],
                "by_language": {lang: part["fact_recall"] for lang, part in s.get("by_language", {}).items()},
            }
    return {
        "at": section["ran_at"],
        "commit": commit or "unknown",
        "dirty": dirty,
        "splits": splits,
        "questions": {s: section["questions"][s] for s in splits},
        "rows": list(section["engines"]),
        "figures": figures,
    }


def log_reading(section: dict[str, Any], log: Path = READINGS_LOG) -> dict[str, Any]:
    """Append one JSON line for this run to the readings log (kept in git: each reading of a held-out
    split stays on record, with the commit that produced it and whether the tree had changes)."""
    # Dirty means code or data changed since the commit; the results file and this log do not count.
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results.json",
                      f":!{READINGS_LOG.relative_to(ROOT)}"))
    line = reading_line(section, commit=_git("rev-parse", "--short=12", "HEAD"), dirty=dirty)
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
    return line


def write_section(section: dict[str, Any], out: Path) -> None:
    results = json.loads(out.read_text()) if out.exists() else {}
    results["eval"] = {k: v for k, v in section.items() if not k.startswith("_")}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated question ids")
    parser.add_argument("--engines", default="", help="comma-separated rows of bench/eval/engines.json (default all)")
    parser.add_argument("--split", choices=(*SPLITS, "all", "final"), default="all",
                        help="tune with --split dev; test is held out; all = dev and test; holdout and unseen run "
                        "only when named, for final readings (final = every split; docs/quality.md)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results file (default bench/results.json)")
    parser.add_argument("--reports", default="", help="also write each final report into this directory")
    parser.add_argument("--log", default=str(READINGS_LOG),
                        help="readings log a run of test, holdout or unseen appends to (default %(default)s)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    splits = splits_for(args.split)
    questions = load_questions([s for s in args.only.split(",") if s], splits)
    engines = load_engines([e for e in args.engines.split(",") if e])
    section = run_eval(questions=questions, engines=engines, verbose=not args.quiet)
    print_table(section)
    held_out = logged_splits(questions)
    if held_out:
        log_reading(section, Path(args.log))
        print(f"{', '.join(held_out)} questions were read: logged in {args.log}; say what changed since the last "
              'reading in docs/quality.md ("Readings of the test and holdout splits")')
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
