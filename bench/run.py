"""Run the benchmarks, print their tables and write bench/results.json.

    .venv/bin/python bench/run.py                          # everything (`make bench`), ~6 minutes on 2 cores
    .venv/bin/python bench/run.py --only scale,stream      # `make stress`
    .venv/bin/python bench/run.py --only scale --database postgres   # jobs/min on PostgreSQL (scale_pg)
    .venv/bin/python bench/run.py --smoke --out /tmp/r.json  # tiny sizes, seconds (the test suite runs this)

Everything is set up from nothing in a temporary directory (see bench/harness.py); nothing outside
it is touched except the results file. Sections not run keep their previous results in the file
(each section records when it ran).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import (  # noqa: E402
    bench_adversarial,
    bench_fairness,
    bench_heavy,
    bench_orchestration,
    bench_render,
    bench_scale,
    bench_stream,
    bench_tokens,
)
from bench.harness import Stack, machine  # noqa: E402

SECTIONS = ("render", "orchestration", "tokens", "heavy", "stream", "scale", "adversarial", "fairness")
DEFAULT_OUT = ROOT / "bench" / "results.json"

# Full-size parameters (make bench) and tiny ones (--smoke). Latency: a model server that starts
# answering after 0.5 s and then writes 50 tokens/s per request (a mid-size model on one GPU under load).
FULL: dict[str, dict[str, Any]] = {
    "render": {"words": 5000},
    "orchestration": {"steps": 6, "ttft": 0.5, "tokens_per_s": 50.0, "think_words": 100, "concurrency": 8},
    "orchestration_light": {"steps": 6, "ttft": 0.5, "tokens_per_s": 50.0, "think_words": 0, "concurrency": 8,
                            "warm": False},
    # The same workload against a batching model: 8 requests decoding at once each run at
    # 1 / (1 + 0.1 × 7) ≈ 59% speed (a GPU's batch: total throughput up, each sequence slower).
    "orchestration_batched": {"steps": 6, "ttft": 0.5, "tokens_per_s": 50.0, "think_words": 100, "concurrency": 8,
                              "warm": False, "batch_slowdown": 0.1},
    "tokens": {"steps": (3, 6, 12)},
    # Heavy mode (k = 3 parallel runs per step + a synthesis) against standard, on the batching model above.
    "heavy": {"steps": 3, "k": 3, "ttft": 0.5, "tokens_per_s": 50.0, "think_words": 100, "batch_slowdown": 0.1,
              "warm": False},
    "stream": {"jobs": 20, "steps": 3, "ttft": 0.5, "tokens_per_s": 50.0, "workers": 2, "concurrency": 12},
    "scale": {"jobs": 12, "steps": 3, "concurrency": 4, "ttft": 0.5, "tokens_per_s": 50.0},
    "adversarial": {"size": 500_000, "parser_sizes": (100_000, 1_000_000)},
    "fairness": {"jobs": 30, "steps": 5, "k": 5, "concurrency": 4, "compare": True},
}
SMOKE: dict[str, dict[str, Any]] = {
    "render": {"words": 300},
    "orchestration": {"steps": 2, "ttft": 0.05, "tokens_per_s": 2000.0, "think_words": 0, "concurrency": 3,
                      "warm": False},
    "tokens": {"steps": (1, 2), "concurrency": 3},
    "heavy": {"steps": 1, "k": 2, "ttft": 0.05, "tokens_per_s": 2000.0, "think_words": 0, "warm": False},
    "stream": {"jobs": 2, "steps": 1, "ttft": 0.05, "tokens_per_s": 2000.0, "workers": 1, "concurrency": 3,
               "warm": False},
    "scale": {"jobs": 2, "steps": 1, "concurrency": 3, "ttft": 0.05, "tokens_per_s": 2000.0, "warm": False,
              "whole_jobs": 1, "whole_outputs": ("md", "pdf")},
    "adversarial": {"size": 2_000, "parser_sizes": (2_000,)},
    "fairness": {"jobs": 2, "steps": 1, "k": 2, "concurrency": 2, "ttft": 0.05, "tokens_per_s": 2000.0,
                 "warm": False},
}


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    width = max((len(k) for k, _ in rows), default=0)
    print(f"\n{title}\n{'-' * len(title)}")
    for key, value in rows:
        print(f"  {key.ljust(width)}  {value}")
    sys.stdout.flush()


def summary_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(benchmark, metric, value, goal) for the README table."""
    rows: list[tuple[str, str, str, str]] = []
    o = results.get("orchestration")
    if o:
        rows += [
            ("orchestration", f"critical path ({o['steps']} steps)", f"{o['critical_path_s']:.1f} s", ""),
            ("orchestration", "parallel wall", f"{o['parallel_wall_s']:.1f} s", ""),
            ("orchestration", "sequential wall (one step at a time)", f"{o['sequential_wall_s']:.1f} s", ""),
            ("orchestration", "parallel speedup", f"{o['parallel_speedup']:.2f}× (ideal {o['ideal_speedup']:.2f}×)",
             "≥ 3"),
            ("orchestration", "overhead ratio (wall / critical path)", f"{o['overhead_ratio']:.3f}", "≤ 1.10"),
        ]
        light = o.get("variants", {}).get("no_thinking")
        if light:
            rows.append(("orchestration", "same, researcher without thinking: speedup / overhead",
                         f"{light['parallel_speedup']:.2f}× (ideal {light['ideal_speedup']:.2f}×) / "
                         f"{light['overhead_ratio']:.3f}", ""))
        batched = o.get("variants", {}).get("batched")
        if batched:
            rows.append(("orchestration", "same, batching model (GPU-like): speedup / overhead",
                         f"{batched['parallel_speedup']:.2f}× (ideal {batched['ideal_speedup']:.2f}×) / "
                         f"{batched['overhead_ratio']:.3f}", ""))
    h = results.get("heavy")
    if h:
        rows += [
            ("heavy", f"wall, heavy (k = {h['k']}) / standard, batching model",
             f"{h['wall_s_heavy']:.1f} s / {h['wall_s_standard']:.1f} s = {h['wall_ratio_vs_standard']:.2f}×", "≤ 1.4"),
            ("heavy", "total tokens, heavy / standard",
             f"{h['total_tokens_heavy']:,} / {h['total_tokens_standard']:,} = {h['token_ratio_vs_standard']:.2f}×", ""),
            ("heavy", "prompt tokens per researcher round (round 1, 2, …)",
             ", ".join(f"{n:,}" for n in h["tokens_per_round"]), "flat"),
        ]
    s = results.get("stream")
    if s:
        rows += [
            ("stream", f"emit → WebSocket, {s['jobs']} jobs at once ({s['events']} events)",
             f"p50 {s['p50_ms']:.1f} ms, p99 {s['p99_ms']:.1f} ms", "p99 ≤ 50 ms"),
        ]
    r = results.get("render")
    if r:
        rows += [
            ("render", f"{r['words']:,}-word report → PDF", f"{r['pdf_s']:.2f} s", ""),
            ("render", "→ PPTX", f"{r['pptx_s']:.2f} s", ""),
            ("render", f"→ podcast ({r['tts_backend']})",
             f"{r['podcast_s']:.1f} s for {r['podcast_audio_s'] / 60:.1f} min of audio "
             f"({r['podcast_audio_s'] / r['podcast_s']:.0f}× real time)", "≥ 100×"),
        ]
    c = results.get("scale")
    if c:
        rows += [
            ("scale", f"jobs/min, 1 worker × {c['concurrency_per_worker']}", f"{c['jobs_per_min_1_worker']:.1f}", ""),
            ("scale", f"jobs/min, 2 workers × {c['concurrency_per_worker']}", f"{c['jobs_per_min_2_workers']:.1f} "
                                                                             f"({c['ratio']:.2f}×)", ""),
            ("scale", "peak worker RSS (parent + children)", f"{c['peak_worker_rss_mb']:.0f} MB", ""),
        ]
        w = c.get("whole_jobs")
        if w:
            rows += [
                ("scale", f"whole jobs/min ({'+'.join(w['outputs'])}), 1 worker × {c['concurrency_per_worker']}",
                 f"{w['jobs_per_min_1_worker']:.1f}", ""),
                ("scale", f"whole jobs/min, 2 workers × {c['concurrency_per_worker']}",
                 f"{w['jobs_per_min_2_workers']:.1f} ({w['ratio']:.2f}×)", ""),
            ]
            cpu = w.get("cpu_bound")
            if cpu:
                rows += [
                    ("scale", "whole jobs/min, instant model (CPU-bound), 1 worker",
                     f"{cpu['jobs_per_min_1_worker']:.1f}", ""),
                    ("scale", "whole jobs/min, instant model (CPU-bound), 2 workers",
                     f"{cpu['jobs_per_min_2_workers']:.1f} ({cpu['ratio']:.2f}×)", ""),
                ]
    p = results.get("scale_pg")
    if p:
        rows += [
            ("scale (PostgreSQL)", f"jobs/min, 1 worker × {p['concurrency_per_worker']}",
             f"{p['jobs_per_min_1_worker']:.1f}", ""),
            ("scale (PostgreSQL)", f"jobs/min, 2 workers × {p['concurrency_per_worker']}",
             f"{p['jobs_per_min_2_workers']:.1f} ({p['ratio']:.2f}×)", ""),
        ]
    a = results.get("adversarial")
    if a:
        worst = a["worst"]
        rows.append(("adversarial", f"worst request/task path on {a['size']:,}-character attacks",
                     f"{worst['ratio']:.2f}× plain ({worst['path']}, {worst['attack']})", "≤ 10×"))
    f = results.get("fairness")
    if f:
        q = f["queue"]
        what = f"one-step job behind one user's {q['jobs']} heavy jobs (k = {q['k']}), {f['workers']}"
        rows.append(("fairness", what,
                     f"{f['behind_queue_s']:.2f} s vs {f['alone_s']:.2f} s alone: {f['slowdown']:.2f}×", "≤ 2×"))
    t = results.get("tokens")
    if t and t.get("runs"):
        per = ", ".join(f"{r['steps']}: {r['total_tokens']:,}" for r in t["runs"])
        verdict = ""
        if "marginal_ratio" in t:
            verdict = f"; marginal/step ratio {t['marginal_ratio']:.2f}, {'linear' if t['linear'] else 'NOT linear'}"
        rows.append(("tokens", "tokens per job by steps", per + verdict, "linear"))
        if "quadratic_share_at_12" in t:
            rows.append(("tokens", "growth exponent / n² share at 12 steps",
                         f"{t['growth_exponent']:.3f} / {t['quadratic_share_at_12']:.1%}", "≤ 1.02 / ≤ 5 %"))
        per_round = t.get("tokens_per_round")
        if per_round:
            rows.append(("tokens", f"researcher prompt per round, {per_round['rounds']} rounds",
                         f"{per_round['prompt_tokens'][0]:,} → {per_round['prompt_tokens'][-1]:,} "
                         f"(replaying the transcript: → {per_round['transcript_replay_tokens'][-1]:,})", "flat"))
    return rows


def markdown_table(results: dict[str, Any]) -> str:
    lines = ["| Benchmark | Metric | Result | Goal |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in summary_rows(results)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help=f"comma-separated sections: {', '.join(SECTIONS)}")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the harness works, measures nothing")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results file (default bench/results.json)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, database)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite",
                        help="postgres: a private PostgreSQL (Debian's package) for the stack; results of the "
                             "scale section are stored as scale_pg")
    args = parser.parse_args(argv)

    only = [s.strip() for s in args.only.split(",") if s.strip()] or list(SECTIONS)
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    params = SMOKE if args.smoke else FULL
    out = Path(args.out)
    results: dict[str, Any] = {}
    if out.is_file() and not args.smoke:
        try:
            results = json.loads(out.read_text())
        except ValueError:
            results = {}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    results.update({"generated": now, "smoke": args.smoke, "machine": machine(),
                    "command": "bench/run.py " + " ".join(argv if argv is not None else sys.argv[1:])})
    ran_at = dict(results.get("ran_at", {}))
    durations = dict(results.get("durations_s", {}))
    load_before = os.getloadavg()
    started_all = time.monotonic()

    stack = Stack(keep=args.keep, verbose=not args.quiet, database=args.database)
    suffix = "_pg" if args.database == "postgres" else ""
    tables: dict[str, Callable[[dict[str, Any]], list[tuple[str, str]]]] = {
        "render": bench_render.table, "orchestration": bench_orchestration.table, "tokens": bench_tokens.table,
        "heavy": bench_heavy.table,
        "stream": bench_stream.table, "scale": bench_scale.table, "adversarial": bench_adversarial.table,
        "fairness": bench_fairness.table,
    }
    try:
        stack.start()
        for name in SECTIONS:
            if name not in only:
                continue
            started = time.monotonic()
            stack.log(f"--- {name}")
            if name == "render":
                result = bench_render.run(**params["render"])
            elif name == "orchestration":
                result = bench_orchestration.run(stack, **params["orchestration"])
                if "orchestration_light" in params:
                    light = bench_orchestration.run(stack, **params["orchestration_light"])
                    result["variants"] = {"no_thinking": {k: light[k] for k in (
                        "steps", "critical_path_s", "parallel_wall_s", "sequential_wall_s", "parallel_speedup",
                        "overhead_ratio", "ideal_speedup", "latency_model", "runs")}}
                if "orchestration_batched" in params:
                    batched = bench_orchestration.run(stack, **params["orchestration_batched"])
                    result.setdefault("variants", {})["batched"] = {k: batched[k] for k in (
                        "steps", "critical_path_s", "parallel_wall_s", "sequential_wall_s", "parallel_speedup",
                        "overhead_ratio", "ideal_speedup", "latency_model", "runs")}
            elif name == "tokens":
                result = bench_tokens.run(stack, **params["tokens"])
            elif name == "heavy":
                result = bench_heavy.run(stack, **params["heavy"])
            elif name == "stream":
                result = bench_stream.run(stack, **params["stream"])
            elif name == "adversarial":
                result = bench_adversarial.run(stack, **params["adversarial"])
            elif name == "fairness":
                result = bench_fairness.run(stack, **params["fairness"])
            else:
                result = bench_scale.run(stack, **params["scale"])
            results[name + suffix] = result
            ran_at[name + suffix] = datetime.now(UTC).isoformat(timespec="seconds")
            durations[name + suffix] = round(time.monotonic() - started, 1)
            print_table(name, tables[name](result))
    finally:
        stack.stop()
    results["ran_at"] = ran_at
    results["durations_s"] = durations
    results["load_average"] = {"before": [round(x, 2) for x in load_before],
                               "after": [round(x, 2) for x in os.getloadavg()]}
    results["total_s"] = round(time.monotonic() - started_all, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
    os.replace(tmp, out)
    print(f"\nSummary ({results['machine']['nproc']} CPUs, {results['machine']['cpu']}, "
          f"Python {results['machine']['python']}; {results['total_s']:.0f} s)\n")
    print(markdown_table(results))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
