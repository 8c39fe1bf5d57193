"""Issue 32, items 2 and 5: a part of a Chinese question answered by English pages (or the reverse).

A page in another script cannot show the part's words (an English page never says 防火性能), so the
coverage test asked for them in vain: every part of "美国的房子为什么大多是木结构，防火性能和使用寿命怎么样"
said "未找到" while its step had ranked the English sentences that answer it, and the answer that the
facet steps quoted stood below three "no source" lines. Now a sentence of a page in another script
covers a part on the ranking's word, as in the ranking itself; and in the answer a sentence in the
question's script that holds none of the words the coverage test looked for (the step's `asked` note:
美国房价 under 为什么大多是木结构) comes after those that answer the part. The pages are written for these tests.
"""

from __future__ import annotations

from research.agents.engines.offline.read import covered
from research.agents.engines.offline.write import _answer, _Section
from research.agents.rank import RankedSentence
from research.agents.types import SourceRef

ENGLISH = SourceRef(1, "https://example.org/fire", "Fire safety of wood-frame houses",
                    "Home fire sprinklers reduce the risk of dying in a home fire by about 85 percent. "
                    "A layer of gypsum board on each side of a wall gives it a one-hour fire rating.")
CHINESE_OTHER = SourceRef(2, "https://example.cn/price", "美国的房子为什么越来越贵",
                          "美国的房价在两年间上涨了约40%，主要原因是房源不足。")
CHINESE_ON_PART = SourceRef(3, "https://example.cn/fire", "木结构住宅的防火",
                            "木结构住宅的防火性能取决于石膏板和喷淋系统。")
PART = "美国的房子的防火性能怎么样"
ASKED = {"防火", "性能"}


def _ranked(*pairs: tuple[str, int]) -> list[RankedSentence]:
    return [RankedSentence(text, source, 1.0 - i / 10, i) for i, (text, source) in enumerate(pairs)]


def test_a_sentence_of_a_page_in_another_script_covers_the_part():
    ranked = _ranked(("Home fire sprinklers reduce the risk of dying in a home fire by about 85 percent.", 1))
    assert covered(ranked, shown=5, asked=ASKED, kind="", on_subject=lambda s: True, sources=[ENGLISH],
                   words=PART)


def test_a_same_script_sentence_without_the_part_s_words_still_does_not():
    ranked = _ranked(("美国的房价在两年间上涨了约40%，主要原因是房源不足。", 2))
    assert not covered(ranked, shown=5, asked=ASKED, kind="", on_subject=lambda s: True,
                       sources=[CHINESE_OTHER], words=PART)
    ranked = _ranked(("木结构住宅的防火性能取决于石膏板和喷淋系统。", 3))
    assert covered(ranked, shown=5, asked=ASKED, kind="", on_subject=lambda s: True,
                   sources=[CHINESE_ON_PART], words=PART)


def test_a_how_much_part_still_wants_a_figure_from_a_page_in_another_script():
    ranked = _ranked(("A layer of gypsum board on each side of a wall slows a fire down.", 1))
    assert not covered(ranked, shown=5, asked=ASKED, kind="much", on_subject=lambda s: True,
                       sources=[ENGLISH], words="美国的房子的防火成本是多少")


def test_the_answer_to_a_part_leads_with_what_answers_the_part():
    from research.agents.engines.offline.parts import question_aspects

    question = "美国的房子为什么大多是木结构，防火性能怎么样？"
    aspects = question_aspects(question, "zh-CN")
    assert len(aspects) == 2
    fire = next(a for a in aspects if "防火" in a.title)
    # The price page's sentence scores higher (it has a figure and names 美国的房子); the English
    # sentence on fire safety answers the part.
    other = {"text": "美国的房子在两年间上涨了约40%，主要原因是房源不足。", "source": 2, "score": 3.0}
    answer = {"text": "Home fire sprinklers reduce the risk of dying in a home fire by about 85 percent.",
              "source": 1, "score": 1.0}
    # The step's notes keep the words its coverage test looked for; the answer holds the part to them.
    section = _Section(fire.title, [other, answer], "", True, {"asked": ["防火", "性能"]})
    chosen = _answer(question, aspects, [section], zh=True)
    assert chosen and chosen[0][1] is answer
    # A same-script sentence that holds them answers the part as well as the English one does.
    on_part = {"text": "美国木结构房子的防火性能取决于石膏板。", "source": 3, "score": 3.0}
    section = _Section(fire.title, [other, on_part, answer], "", True, {"asked": ["防火", "性能"]})
    assert _answer(question, aspects, [section], zh=True)[0][1] is on_part
