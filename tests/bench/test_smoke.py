"""The benchmark harness still works: `bench/run.py --smoke` runs every section at tiny sizes.

Benchmarks are not tests (CI does not run `make bench`); this only checks that the harness sets
up its stack, runs each benchmark end to end and writes well-formed results, so it does not rot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def test_smoke_benchmark_writes_well_formed_results(tmp_path):
    out = tmp_path / "results.json"
    # The harness builds its own environment; pass only what a fresh shell has.
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER")}
    proc = subprocess.run([sys.executable, "bench/run.py", "--smoke", "--quiet", "--out", str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["smoke"] is True and results["machine"]["nproc"] >= 1

    heavy = results["heavy"]
    assert heavy["k"] == 2 and _number(heavy["wall_ratio_vs_standard"]) and heavy["wall_ratio_vs_standard"] > 0
    assert heavy["total_tokens_heavy"] > heavy["total_tokens_standard"] > 0
    assert heavy["tokens_per_round"] and all(_number(n) for n in heavy["tokens_per_round"])

    orch = results["orchestration"]
    for key in ("steps", "critical_path_s", "parallel_wall_s", "sequential_wall_s", "parallel_speedup",
                "overhead_ratio"):
        assert _number(orch[key]) and orch[key] > 0, key
    assert orch["steps"] == 2
    assert orch["runs"]["parallel"]["llm_calls"] > 0
    assert orch["parallel_speedup"] == pytest.approx(orch["sequential_wall_s"] / orch["parallel_wall_s"], rel=0.01)
    assert orch["overhead_ratio"] == pytest.approx(orch["parallel_wall_s"] / orch["critical_path_s"], rel=0.01)
    # No schedule beats the critical path.
    assert orch["parallel_wall_s"] >= orch["critical_path_s"]

    stream = results["stream"]
    assert stream["events"] > 0 and stream["jobs_with_gaps"] == 0
    assert _number(stream["p50_ms"]) and stream["p99_ms"] >= stream["p50_ms"]

    render = results["render"]
    assert 250 <= render["words"] <= 600
    for key in ("pdf_s", "pptx_s", "podcast_s", "podcast_audio_s"):
        assert _number(render[key]) and render[key] > 0, key

    scale = results["scale"]
    for key in ("jobs_per_min_1_worker", "jobs_per_min_2_workers", "ratio", "peak_worker_rss_mb"):
        assert _number(scale[key]) and scale[key] > 0, key

    tokens = results["tokens"]
    assert [r["steps"] for r in tokens["runs"]] == [1, 2]
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in tokens["runs"])
    assert tokens["runs"][1]["total_tokens"] > tokens["runs"][0]["total_tokens"]
    per_round = tokens["tokens_per_round"]  # the researcher's workspace: the task part is the same every round
    assert per_round["rounds"] == len(per_round["prompt_tokens"]) >= 10 and len(set(per_round["task_tokens"])) == 1
    assert per_round["transcript_replay_tokens"][-1] > 2 * per_round["prompt_tokens"][-1]
    # Issue 32: a fixed workspace budget keeps round 12 within 1.2x of round 2 with the default budget, and a
    # budget small enough to bind compacts the memory without losing a source.
    assert per_round["round12_over_round2"] <= 1.2 and per_round["max_over_round2"] <= 1.2
    small = per_round["small_budget"]
    assert small["round12_over_round2"] <= 1.2 and small["compactions"] > 0
    assert small["sources_cited"] == small["sources"] > 0

    adversarial = results["adversarial"]
    assert adversarial["size"] == 2_000 and adversarial["rows"]
    assert {r["path"] for r in adversarial["rows"]} >= {"report edit request (POST)", "report check (worker task)"}
    assert all(_number(r["ratio"]) and r["chars"] == 2_000 for r in adversarial["rows"])
