"""research.report.check: claims against their cited passages, unregistered links, gapless numbering."""

from __future__ import annotations

import re

from research.agents.types import SourceRef
from research.report.check import cited_sentences, report_check, support_score
from research.report.citations import finalize_report

SSB = SourceRef(
    3,
    "https://batteries.example/ssb",
    "Why solid-state batteries are hard",
    "Sulfide electrolytes react with moisture, so cells must be made in dry rooms.\n\n"
    "The separator has to be thinner than 30 micrometres. Pilot lines make well under 1 gigawatt-hour a year.",
)
LLZO = SourceRef(
    5, "https://ceramics.example/llzo", "LLZO", "LLZO is brittle and needs sintering above 1,000 degrees Celsius."
)
ZH = SourceRef(6, "https://zh.example/na", "钠离子电池", "钠离子电池的能量密度低于磷酸铁锂电池。钠资源丰富，分布广泛。")
SOURCES = [SSB, LLZO, ZH]


def _refs(md: str) -> list[str]:
    return re.findall(r"^- \[(\d+)\] ", md, re.M)


def test_support_score_needs_the_terms_and_every_number():
    passage = SSB.text
    assert support_score("Cells must be made in dry rooms.", passage) == 1.0
    assert support_score("The separator has to be thinner than 30 micrometres.", passage) == 1.0
    assert support_score("The separator has to be thinner than 20 micrometres.", passage) < 0.6
    assert support_score("Prices of cobalt doubled after the mine closed.", passage) < 0.2


def test_supported_claims_stay_and_numbering_has_no_gaps():
    md = "# R\n\n## Findings\n\n- LLZO is brittle and needs sintering [5].\n- Cells must be made in dry rooms [3].\n"
    result = report_check(md, SOURCES)
    body = result.markdown.split("## References")[0]
    # First cited is [1], next [2]: the registry's 5 and 3 renumbered in order of use.
    assert "sintering [1]" in body and "dry rooms [2]" in body
    assert _refs(result.markdown) == ["1", "2"]
    assert "[1] [LLZO](https://ceramics.example/llzo)" in result.markdown
    assert result.cited == [5, 3] and result.flagged == 0 and result.support_rate == 1.0
    assert "Verification" not in result.markdown


def test_unsupported_claims_are_marked_and_counted_or_removed_when_sure():
    md = (
        "# R\n\nPilot lines make 5 gigawatt-hours a year [3]. "
        "Cells must be made in dry rooms [3].\n\n"
        "- Cobalt prices doubled after the Congolese mine strike closed three export routes [5].\n"
    )
    result = report_check(md, SOURCES)
    assert "5 gigawatt-hours a year [1] *(unverified)*" in result.markdown  # a wrong figure: marked
    assert result.flagged == 1 and result.removed_claims == 1  # nothing of the cobalt claim is in [5]: removed
    assert "Cobalt" not in result.markdown
    assert "1 cited claim(s) could not be verified" in result.markdown
    assert result.summary()["unsupported_claims"] == 1 and result.checked == 3


def test_links_and_urls_no_tool_returned_are_removed_and_counted():
    md = (
        "A [trial](https://evil.example/trial) showed it (see https://evil.example/x) and <https://evil.example/y>. "
        "The [registered page](https://batteries.example/ssb) says cells must be made in dry rooms [3]. "
        "![chart](figures/chart.png)\n\n```\ncode keeps https://code.example/z\n```\n"
    )
    result = report_check(md, SOURCES)
    assert "evil.example" not in result.markdown and result.removed_links == 3
    # The sentence lost its only link as invented and no source says it: gone from a generated report,
    # kept and marked in a user's edit.
    assert "A trial showed it" not in result.markdown and result.uncited_removed == 1
    edit = report_check(md, SOURCES, remove_sure=False)
    assert "A trial showed it" in edit.markdown and "*(unverified)*" in edit.markdown.split("The [registered")[0]
    assert "[registered page](https://batteries.example/ssb)" in result.markdown
    assert "![chart](figures/chart.png)" in result.markdown and "https://code.example/z" in result.markdown


def test_report_edits_keep_their_own_references_and_lose_unknown_numbers():
    # A finished report (numbers renumbered from the registry), then edited by a user who adds [9].
    final = report_check(finalize_report("Cells must be made in dry rooms [3]. LLZO is brittle [5].", SOURCES,
                                         locale="en-US").markdown, SOURCES)
    assert _refs(final.markdown) == ["1", "2"]
    edited = final.markdown.replace("LLZO is brittle [2].", "LLZO is brittle [2]. It is also cheap [9].")
    result = report_check(edited, SOURCES)
    assert result.removed_citations == 1 and "[9]" not in result.markdown
    assert "LLZO is brittle [2]" in result.markdown and _refs(result.markdown) == ["1", "2"]
    assert report_check(result.markdown, SOURCES).markdown == result.markdown  # idempotent


def test_other_script_claims_are_unchecked_without_a_judge_and_judged_with_one():
    md = "固态电池需要在干燥间中生产 [3]。钠离子电池的能量密度低于磷酸铁锂电池。[6]\n"
    result = report_check(md, SOURCES, locale="zh-CN")
    assert [c.supported for c in result.claims] == [None, True] and result.flagged == 0
    judged = report_check(md, SOURCES, locale="zh-CN", judge=lambda claim, passage: "dry rooms" in passage)
    assert [c.supported for c in judged.claims] == [True, True]
    refused = report_check(md, SOURCES, locale="zh-CN", judge=lambda claim, passage: False)
    assert refused.flagged == 1 and "（未经核实）" in refused.markdown


def test_cited_sentences_keep_markers_with_their_sentence():
    md = "First claim here. [1] Second one [2]. 第三句。[3]第四句[4]。\n\n## References\n\n- [1] x\n"
    assert [n for _, n in cited_sentences(md)] == [(1,), (2,), (3,), (4,)]


def test_model_judge_asks_the_model_and_treats_failures_as_cannot_tell():
    import json

    from research.llm.client import LLMClient
    from research.report.check import model_judge
    from tests.support.fake_llm import FakeLLM, Reply

    def responder(body: dict) -> Reply:
        system = body["messages"][0]["content"]
        user = body["messages"][-1]["content"]
        if not system.startswith("# Role: verifier"):
            return Reply(content="wrong role")
        if "broken" in user:
            return Reply(content="not json at all")
        return Reply(content=json.dumps({"supported": "dry rooms" in user}))

    with FakeLLM(responder) as fake:
        judge = model_judge(LLMClient(base_url=fake.base_url, model=fake.model), "zh-CN", max_calls=3)
        assert judge("固态电池需要干燥间。", "Cells must be made in dry rooms.") is True
        assert judge("固态电池很便宜。", "LLZO is brittle.") is False
        assert judge("broken", "broken") is None
        assert judge("固态电池需要干燥间。", "Cells must be made in dry rooms.") is None  # over max_calls
        assert len(fake.requests) == 3


def test_a_claim_the_judge_also_rejects_is_removed_and_one_it_accepts_stays():
    # Shares words with [3] (so the lexical test alone only marks it) but says something else.
    md = (
        "# R\n\nEvery maker halved the cost of its dry rooms and separators within a year [3]. "
        "Cells must be made in dry rooms [3].\n"
    )
    alone = report_check(md, SOURCES)
    assert alone.flagged == 1 and alone.removed_claims == 0 and "*(unverified)*" in alone.markdown
    asked: list[str] = []

    def judge(claim: str, passage: str) -> bool:
        asked.append(claim)
        return False

    both = report_check(md, SOURCES, judge=judge)
    # Only the claim that failed the lexical test is put to the judge.
    assert asked == ["Every maker halved the cost of its dry rooms and separators within a year."]
    assert both.removed_claims == 1 and both.flagged == 0 and "halved" not in both.markdown
    assert "Cells must be made in dry rooms [1]." in both.markdown
    assert "1 claim(s) that the cited source does not support were removed" in both.markdown
    kept = report_check(md, SOURCES, judge=lambda claim, passage: True)
    assert kept.removed_claims == 0 and kept.flagged == 0 and "halved" in kept.markdown
    # Other-script claims are never removed on the judge's word alone: marked only.
    zh = report_check("固态电池需要在干燥间中生产 [3]。\n", SOURCES, locale="zh-CN", judge=lambda c, p: False)
    assert zh.removed_claims == 0 and zh.flagged == 1


def test_a_pointer_left_without_its_address_goes_whole():
    md = (
        "# R\n\nCells must be made in dry rooms [3]. More at https://unknown.example.net/page. "
        "See <https://evil.example/y>: details.\n\n"
        "钠离子电池的能量密度低于磷酸铁锂电池，这一点在多份报告里都有说明，详见 https://bad.example.cn/x。[6]\n\n"
        "Read more: https://evil.example/z\n\nThe next paragraph stays.\n"
    )
    result = report_check(md, SOURCES)
    body = result.markdown.split("## References")[0]
    assert "More at" not in body and "Read more" not in body and "unknown.example" not in body
    assert "Cells must be made in dry rooms [1]." in body
    # A sentence that lost its address and that no source supports goes from a generated report;
    # a user's edit keeps the text after the address, marked.
    assert "details" not in body
    edit = report_check(md, SOURCES, remove_sure=False).markdown
    assert "See : details." in edit or "See: details." in edit
    assert "钠离子电池的能量密度低于磷酸铁锂电池" in body  # a long sentence keeps its words
    assert "\n\n\n" not in body and "The next paragraph stays." in body
    assert result.removed_links == 4
