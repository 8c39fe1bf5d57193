"""Issue 33: the podcast's intro is not "Here's the short version: <the question>" nor
"Let's start with answer" (the offline report opens with an Answer section that repeats each part asked)."""

from __future__ import annotations

from research.render.podcast_script import podcast_script_from_markdown

EN = """# What limits solid-state battery production and safety?

## Answer

**What limits solid-state battery production?**
Making thin ceramic separators at scale remains slow and costly [1].

**What limits solid-state battery safety?**
Lithium dendrites can still grow through flawed electrolytes [2].

## Key findings

- Pilot lines produce cells in small batches [1].
- Dendrite growth depends on pressure and temperature [2].

## References

- [1] [Separators](https://example.org/1)
- [2] [Dendrites](https://example.org/2)
"""

ZH = """# 固态电池的量产和安全受什么限制？

## 答案

**固态电池的量产受什么限制？**
大规模制造薄陶瓷隔膜仍然缓慢且昂贵[1]。

## 主要发现

- 试验线只能小批量生产电芯[1]。

## 参考文献

- [1] [隔膜](https://example.org/1)
"""


def _lines(markdown: str, locale: str = "en-US") -> list[str]:
    return [line.text for line in podcast_script_from_markdown(markdown, locale=locale).lines]


def test_english_intro_gives_an_answer_not_the_question():
    lines = _lines(EN)
    hook = next(t for t in lines if t.startswith("Here's the short version"))
    assert "?" not in hook and "ceramic separators" in hook
    assert not any(t.lower().startswith("let's start with answer") for t in lines)
    assert "So, what's the answer?" in lines


def test_chinese_intro_gives_an_answer_not_the_question():
    lines = _lines(ZH, "zh-CN")
    hook = next(t for t in lines if t.startswith("先说结论"))
    assert "？" not in hook and "陶瓷隔膜" in hook
    assert not any("“答案”" in t for t in lines)


def test_an_identifier_is_spoken_as_words_and_escapes_as_their_characters():
    """A quote from a page stored as Markdown keeps its escapes ("RESTIC\\_PASSWORD\\_FILE", "\\~"): the
    hosts say the words of the identifier, never one run-together word, and no backslash."""
    from research.render.podcast_script import tidy_line

    md = ("# How do I set up restic?\n\n## Answer\n\nPoint the RESTIC\\_PASSWORD\\_FILE environment variable at a "
          "file only you can read. [1]\n\nThen run restic -r /srv/repo backup \\~ to save your home folder. [1]\n")
    spoken = " ".join(line.text for line in podcast_script_from_markdown(md, locale="en-US").lines)
    assert "RESTIC PASSWORD FILE" in spoken and "RESTICPASSWORDFILE" not in spoken
    assert "\\" not in spoken and "backup ~" in spoken
    assert tidy_line("This is *important* and _new_.", False) == "This is important and new."
