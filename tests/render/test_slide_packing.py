"""Decks follow their own word rule (`expected_slide_count`) for any report shape, not just the fixtures."""

from __future__ import annotations

import random

import pytest

from research.render.derive import MAX_BULLETS, expected_slide_count, slide_outline
from research.report.document import parse_report

EN_WORDS = "solar module prices fell sharply while storage capacity and grid links grew across many markets".split()
ZH_TEXT = "新能源汽车销量持续增长充电设施不断完善电池成本明显下降出口市场快速扩大"


def sentence(rng: random.Random, zh: bool, number: int) -> str:
    if zh:
        size = rng.randint(22, 50)  # characters: ≈ 13–30 words
        return "".join(rng.choice(ZH_TEXT) for _ in range(size)) + f"{number}。[1]"
    size = rng.randint(13, 30)
    return " ".join(rng.choice(EN_WORDS) for _ in range(size)).capitalize() + f" {number}. [1]"


def report(rng: random.Random, zh: bool) -> str:
    """A short answer paragraph, then bullet sections of 1–7 sentences (the offline engine's shape)."""
    n = iter(range(1000))
    parts = ["# 问题" if zh else "# Question", "", "## 答案" if zh else "## Answer", ""]
    parts.append(("" if zh else " ").join(sentence(rng, zh, next(n)) for _ in range(rng.randint(1, 3))))
    for index in range(rng.randint(2, 6)):
        parts += ["", f"## {'小节' if zh else 'Section'} {index}", ""]
        parts += [f"- {sentence(rng, zh, next(n))}" for _ in range(rng.randint(1, 7))]
    parts += ["", "## 参考文献" if zh else "## References", "", "- [1] [Source](https://site.test/a.html)"]
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("zh", [False, True], ids=["en", "zh"])
def test_bullet_slides_stay_within_the_word_rule(zh: bool):
    rng = random.Random(7)
    for _ in range(120):
        md = report(rng, zh)
        doc = parse_report(md, locale="zh-CN" if zh else "en-US")
        slides = [s for s in slide_outline(doc).slides if s.bullets]
        low, high = expected_slide_count(doc)
        assert sum(len(s.bullets) for s in slides) == len(doc.sentences())  # nothing lost, nothing doubled
        assert all(len(s.bullets) <= MAX_BULLETS for s in slides)
        assert low <= len(slides) <= high, (len(slides), low, high, [s.title for s in slides], md)
        for slide in slides:  # a slide that only continues a section is not a stub
            if slide.title.endswith(("(cont.)", "（续）")):
                assert len(slide.bullets) >= 3, slide.title
