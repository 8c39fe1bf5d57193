"""The one citation grammar and the report Markdown helpers (research/report/citations.py)."""

from __future__ import annotations

import pytest

from research.agents.nodes.model import drop_text_tool_calls
from research.agents.types import SourceRef
from research.report.citations import (
    citation_numbers,
    filter_citations,
    finalize_report,
    strip_citations,
    strip_references_section,
)


@pytest.mark.parametrize(
    ("md", "numbers"),
    [
        ("A [1].", [1]),
        ("A [1, 2] and [2,3].", [1, 2, 3]),
        ("Chinese comma [3，4] and enumeration [5、6] and semicolon [7; 8].", [3, 4, 5, 6, 7, 8]),
        ("A range [3-5] and an en dash [7–8].", [3, 4, 5, 7, 8]),
        ("Adjacent [3][4].", [3, 4]),
        ("光伏成本下降[2]。", [2]),  # CJK text may touch the bracket
        ("Not citations: [x](http://l) [3](http://l) ![4](f.png) [^1] x[5] `a[6]`.", []),
        ("```\nvalues[7]\n```\nText [8].", [8]),
        ("A huge range [1-500] is two numbers.", [1, 500]),
    ],
)
def test_citation_grammar(md, numbers):
    assert citation_numbers(md) == numbers


def test_filter_citations_normalises_and_counts():
    text, dropped = filter_citations("A [1, 2]. B [3]. C [2-4]. D [x](http://l) [^1] `a[3]`. E [1，9].", {1, 2, 4})
    assert text == "A [1][2]. B. C [2][4]. D [x](http://l) [^1] `a[3]`. E [1]."
    assert dropped == 3


def test_strip_citations_for_speech():
    assert strip_citations("Solar is cheap [1, 2]. 光伏[3-4]。 Code `a[1]`.") == "Solar is cheap. 光伏。 Code `a[1]`."


def test_strip_references_section_keeps_later_sections():
    md = "# T\n\nText [1].\n\n## Sources\n\n- [1] a\n\n## Appendix\n\nMore.\n\n**参考文献**\n\n1. b\n"
    assert strip_references_section(md) == "# T\n\nText [1].\n\n## Appendix\n\nMore.\n"


def test_strip_references_section_leaves_code_alone():
    md = "# T\n\n```\n## References\n```\n\nEnd.\n"
    assert strip_references_section(md) == md


def test_finalize_report_uses_the_same_grammar_and_the_registry():
    sources = [SourceRef(1, "https://a.example/x", "A", "", "web"), SourceRef(2, "kb://doc/1", "Notes", "", "kb"),
               SourceRef(3, "https://c.example", "C", "", "web")]
    md = "# T\n\nClaim [1-2]. Other [3，9]. 中文[2]。\n\n## References\n\n- [1] made up\n"
    final = finalize_report(md, sources, locale="en-US")
    assert final.cited == [1, 2, 3] and final.removed == 1
    assert "made up" not in final.markdown
    assert "Claim [1][2]. Other [3]. 中文[2]。" in final.markdown
    assert final.markdown.endswith(
        "## References\n\n- [1] [A](https://a.example/x)\n- [2] Notes (knowledge base)\n- [3] [C](https://c.example)\n"
    )


def test_drop_text_tool_calls():
    assert drop_text_tool_calls('Answer <tool_call>{"name": "web_search"}</tool_call>') == "Answer"
    assert drop_text_tool_calls("Answer <tool_call>{unclosed") == "Answer"
