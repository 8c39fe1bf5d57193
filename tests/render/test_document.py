"""The one parse of a report: sentences keep their own citations, on every output derived from them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.render.derive import slide_outline
from research.render.podcast_script import podcast_script
from research.report.citations import cited_numbers
from research.report.document import Figure, ListBlock, Paragraph, Sentence, Table, parse_report
from tests.render.reports import all_reports


def sentence_for(bullet: str, sentences: list[Sentence]) -> list[Sentence]:
    """The report sentences a (possibly shortened) bullet was made from."""
    body = re.sub(r"(?:\s*\[\d+(?:\s*[,，]\s*\d+)*\])+$", "", bullet).rstrip("…").strip()
    return [s for s in sentences if s.text.startswith(body)]


def assert_bullets_keep_their_citations(md: str) -> int:
    doc = parse_report(md)
    sentences = doc.sentences()
    checked = 0
    for slide in slide_outline(doc).slides:
        for bullet in slide.bullets:
            sources = sentence_for(bullet, sentences)
            assert sources, f"bullet not from the report: {bullet!r}"
            assert tuple(cited_numbers(bullet)) in {s.citations for s in sources}, bullet
            checked += 1
    return checked


def test_citation_after_the_full_stop_belongs_to_that_sentence():
    doc = parse_report(
        "# T\n\n## Summary\n\nBatteries got cheaper. [3] Cost estimates vary [1][2]. "
        "A third claim, e.g. this one. [4]\n\n"
        "## 中文\n\n欧洲是主要市场。[2]光伏已经成为最大的电源类型。[4]没有来源的句子。\n"
    )
    summary, chinese = doc.sections
    assert [(s.text, s.citations) for s in summary.sentences()] == [
        ("Batteries got cheaper.", (3,)),
        ("Cost estimates vary.", (1, 2)),
        ("A third claim, e.g. this one.", (4,)),
    ]
    assert [(s.text, s.citations) for s in chinese.sentences()] == [
        ("欧洲是主要市场。", (2,)),
        ("光伏已经成为最大的电源类型。", (4,)),
        ("没有来源的句子。", ()),
    ]


def test_blocks_notes_references_and_code(en_report: str):
    md = "# Title\n\n_Produced by the offline engine: extractive._\n\n" + en_report.split("\n", 1)[1]
    doc = parse_report(md)
    assert doc.title == "Title" and doc.locale == "en-US"
    lead = doc.sections[0]
    assert isinstance(lead.blocks[0], Paragraph) and lead.blocks[0].aside  # the engine's note is not content
    assert all("offline engine" not in s.text for s in doc.sentences())
    titles = [s.title for s in doc.sections]
    assert titles == ["", "Cost trends", "Deployment", "Grid integration"]
    cost = doc.sections[1]
    table = next(b for b in cost.blocks if isinstance(b, Table))
    assert table.header == ("Year", "Price ($/W)", "Capacity (GW)") and table.rows[-1] == ("2023", "0.12", "1400")
    deployment = doc.sections[2]
    assert isinstance(deployment.blocks[0], ListBlock)
    assert deployment.blocks[1] == Figure("capacity.png", "Installed capacity by region")
    assert [s.citations for s in deployment.sentences()] == [(1,), (5,), (4,)]
    # Code is kept as code: "[1]" inside it is not a citation, and raw <script> is not content.
    assert not any("print" in s.text or "alert" in s.text for s in doc.sentences())
    assert [r.number for r in doc.references] == [1, 2, 3, 4, 5]
    assert doc.references[2].url == "https://www.lazard.com/lcoe" and doc.references[2].title == "Lazard LCOE"


@pytest.mark.parametrize("name", sorted(all_reports()))
def test_every_bullet_cites_exactly_its_sentence(name: str):
    assert assert_bullets_keep_their_citations(all_reports()[name]) >= 3


# ---------------------------------------------------------------- generated reports

WORDS = st.sampled_from("solar costs fell sharply grid storage batteries demand rose prices 2023 the market".split())
ZH_WORDS = st.sampled_from(["电池", "成本", "下降", "市场", "增长", "光伏", "储能", "需求", "2023年"])
CITES = st.lists(st.integers(1, 30), min_size=0, max_size=3, unique=True)


@st.composite
def cited_sentence(draw: st.DrawFn) -> tuple[str, str, tuple[int, ...]]:
    """(markdown, plain text, citations) for one sentence, with the marker before or after the stop."""
    zh = draw(st.booleans())
    words = draw(st.lists(ZH_WORDS if zh else WORDS, min_size=3, max_size=12))
    text = "".join(words) if zh else " ".join(words).capitalize()
    cites = tuple(draw(CITES))
    marks = "".join(f"[{n}]" for n in cites) if draw(st.booleans()) else (f"[{', '.join(map(str, cites))}]" if cites
                                                                           else "")  # fmt: skip
    stop = "。" if zh else draw(st.sampled_from([".", "!", "?"]))
    if zh:
        md = f"{text}{stop}{marks}"
    elif draw(st.booleans()) and marks:
        md = f"{text} {marks}{stop}"
    else:
        md = f"{text}{stop} {marks}".rstrip()
    return md, text + stop, cites


@st.composite
def report(draw: st.DrawFn) -> tuple[str, list[tuple[str, tuple[int, ...]]]]:
    parts = ["# Generated report", ""]
    expected: list[tuple[str, tuple[int, ...]]] = []
    for number in range(draw(st.integers(1, 5))):
        parts += [f"## Section {number + 1}", ""]
        for _ in range(draw(st.integers(1, 3))):
            sentences = draw(st.lists(cited_sentence(), min_size=1, max_size=6))
            if draw(st.booleans()):
                parts += [" ".join(md for md, _, _ in sentences), ""]
            else:
                parts += [f"- {md}" for md, _, _ in sentences] + [""]
            expected += [(text, cites) for _, text, cites in sentences]
    return "\n".join(parts), expected


@settings(max_examples=150, deadline=None)
@given(report())
def test_generated_reports_parse_back_and_bullets_keep_citations(generated):
    md, expected = generated
    doc = parse_report(md)
    got = [(s.text, s.citations) for s in doc.sentences()]
    assert got == expected
    assert_bullets_keep_their_citations(md)
    script = podcast_script(doc)
    assert all("[" not in line.text for line in script.lines)
