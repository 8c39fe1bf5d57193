"""`make eval` does not rot: the evaluation runs one question through both engines end to end,
and its scoring functions judge reports the way they claim to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.eval.corpus import CorpusSite, load_pages, search
from bench.eval.metrics import score_report
from bench.eval.run import load_questions
from research.agents.types import SourceRef

ROOT = Path(__file__).resolve().parents[2]


def _question(qid: str) -> dict:
    return load_questions([qid])[0]


def test_every_fact_is_on_a_page_the_question_names():
    pages = {p.name: p for p in load_pages()}
    questions = load_questions()
    assert len(questions) >= 5 and {q["locale"][:2] for q in questions} == {"en", "zh"}
    for q in questions:
        for fact in q["facts"]:
            text = " ".join(pages[name].text for name in fact["pages"]).casefold()
            assert any(all(k in text for k in keys) for keys in fact["match"]), (q["id"], fact["fact"])


def test_corpus_site_serves_pages_and_searches_across_languages():
    import httpx

    with CorpusSite() as site:
        hits = httpx.get(f"{site.url}/search", params={"q": "固态电池 量产", "format": "json"}).json()["results"]
        assert hits and "ssb-" in hits[0]["url"]
        page = httpx.get(hits[0]["url"])
        assert page.status_code == 200 and "<p>" in page.text
        assert httpx.get(f"{site.url}/pages/none.html").status_code == 404
    assert search(load_pages(), "zzzz unknown", "http://x") == []


def test_scores_reward_stated_facts_supported_citations_and_an_answer_first():
    q = _question("heatpump-cold-en")
    text = next(p for p in load_pages() if p.name == "heatpump-cold").text
    sources = [SourceRef(1, "http://site/a", "A", text)]
    good = (
        "# Q\n\n## Key findings\n\n- Field trials of cold-climate air-source heat pumps found an average seasonal "
        "COP of about 2.5 to 3 in regions where winter temperatures regularly fall below minus 15 degrees "
        "Celsius. [1]\n"
        "\n## References\n\n- [1] [A](http://site/a)\n"
    )
    scores = score_report(good, sources, q)
    assert scores.facts[0] and scores.fact_recall == pytest.approx(1 / len(q["facts"]))
    assert scores.citation_support == 1.0 and scores.answer_first and not scores.unretrieved_urls

    bad = (
        "# Q\n\n## Summary\n\nHeat pumps doubled in price during 2019 [1]. See [a trial](https://elsewhere.example/t).\n"
        "\n## References\n\n- [1] [A](http://site/a)\n"
    )
    scores = score_report(bad, sources, q)
    assert scores.fact_recall == 0 and not scores.answer_first
    assert scores.citation_support == 0.0 and scores.unretrieved_urls == ["https://elsewhere.example/t"]


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_eval_runs_one_question_through_both_engines(tmp_path):
    out = tmp_path / "results.json"
    out.write_text(json.dumps({"render": {"kept": True}}))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER")}
    proc = subprocess.run(
        [sys.executable, "bench/eval/run.py", "--only", "hydrogen-cost-en", "--quiet", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "fact" in proc.stdout and "hydrogen-cost-en" in proc.stdout
    results = json.loads(out.read_text())
    assert results["render"] == {"kept": True}  # other sections are kept
    section = results["eval"]
    assert section["questions"] == 1 and "stand-in" in section["note"] and section["machine"]["nproc"] >= 1
    for engine in ("offline", "llm"):
        data = section["engines"][engine]
        assert data["failed_jobs"] == 0
        assert data["unretrieved_urls"] == 0
        assert 0 <= data["fact_recall"] <= 1
        assert data["questions"]["hydrogen-cost-en"]["cited_sentences"] > 0
    assert section["engines"]["offline"]["fact_recall"] >= 0.5
