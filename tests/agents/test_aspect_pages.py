"""A page whose title is about another thing: an aspect of the subject, or another thing of its kind.

"Treating Borrelia burgdorferi infection" and "根除幽门螺杆菌的铋剂四联方案" are titled after a drug or a
germ, yet say things of the subject itself ("the standard treatment for Chagas disease"); a page on another
disease names the subject only beside its own ("Leishmaniasis, like Chagas disease, …", "和带状疱疹一样").
The first is doubtful (read last, its sentences flagged and only where they name the subject), the second
is turned away firmly. Pages written for these tests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.agents.engines.offline.select import DOUBTFUL, _source_weights
from research.agents.subject import _plain_mention, page_about, subject_of
from research.agents.types import SourceRef

EN = "How many people have Chagas disease, and how is it treated?"
EN_ASPECT = ("Benznidazole and nifurtimox: a prescribing summary",
             "Benznidazole is taken twice a day for 60 days. Both drugs are the standard treatment for Chagas "
             "disease in adults and children. Benznidazole causes a rash in about a third of patients, and "
             "nifurtimox causes weight loss. Benznidazole is best avoided in pregnancy.")
EN_SIBLING = ("Leishmaniasis: how many people have it, and how is it treated?",
              "Leishmaniasis, like Chagas disease, is spread by an insect bite. About a million new cases of "
              "leishmaniasis occur each year. Leishmaniasis is treated with miltefosine for 28 days, and it is "
              "found in 90 countries.")
ZH = "带状疱疹有多常见，怎么治疗？"
ZH_ASPECT = ("伐昔洛韦：用法用量与疗程",
             "伐昔洛韦每天服用三次，连用7天。伐昔洛韦是治疗带状疱疹的常用抗病毒药。伐昔洛韦的副作用有头痛和恶心。"
             "肾功能不全的人服用伐昔洛韦要减量。")
ZH_SIBLING = ("腮腺炎：有多常见，怎么治疗",
              "腮腺炎和带状疱疹一样由病毒引起。腮腺炎每年报告约10万例。腮腺炎多见于儿童和青少年，腮腺炎没有特效药，"
              "以对症治疗为主。")


def _refs(*pages: tuple[str, str]) -> list[SourceRef]:
    return [SourceRef(n, f"https://pages.example/{n}", t, x) for n, (t, x) in enumerate(pages, start=1)]


@pytest.mark.parametrize(("question", "locale", "aspect", "sibling"), [
    (EN, "en-US", EN_ASPECT, EN_SIBLING),
    (ZH, "zh-CN", ZH_ASPECT, ZH_SIBLING),
])
def test_a_page_on_an_aspect_is_doubtful_and_one_on_another_of_its_kind_is_turned_away(
        question: str, locale: str, aspect: tuple[str, str], sibling: tuple[str, str]) -> None:
    subject = subject_of(question, locale)
    on_aspect, on_sibling = page_about(subject, *aspect), page_about(subject, *sibling)
    assert not on_aspect.about and not on_aspect.firm, on_aspect
    assert not on_sibling.about and on_sibling.firm, on_sibling
    weights = _source_weights(question, locale, _refs(aspect, sibling))
    assert weights.doubtful.keys() == {1} and weights[1] == DOUBTFUL
    assert weights.rejected.keys() == {2} and weights[2] == 0.0


_BESIDE = ["Like Chagas disease, {}", "Unlike Chagas disease, {}", "{}, more often than Chagas disease does",
           "Compared with Chagas disease, {}", "Besides Chagas disease, {}", "{}, just like Chagas disease"]
_SAID = ["leishmaniasis is spread by sandflies", "it is treated for 28 days", "cases fell by a third"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_BESIDE), st.sampled_from(_SAID)), min_size=1, max_size=4),
       st.booleans())
def test_only_a_mention_that_sets_the_subject_beside_nothing_is_plain(beside: list[tuple[str, str]],
                                                                       plain: bool) -> None:
    sentences = [frame.format(said)[0].upper() + frame.format(said)[1:] + "." for frame, said in beside]
    if plain:
        sentences.insert(1, "Chagas disease is treated with benznidazole.")
    assert _plain_mention(subject_of(EN, "en-US"), " ".join(sentences)) == plain


@pytest.mark.parametrize(("text", "plain"), [
    ("伐昔洛韦是治疗带状疱疹的常用药。", True),
    ("皮肤影像检查有时用于带状疱疹的诊断。", True),  # 像 inside 影像 sets nothing beside it
    ("腮腺炎和带状疱疹一样由病毒引起。", False),
    ("腮腺炎的发病率低于带状疱疹。", False),
])
def test_a_chinese_mention_is_plain_unless_it_compares(text: str, plain: bool) -> None:
    assert _plain_mention(subject_of(ZH, "zh-CN"), text) == plain
