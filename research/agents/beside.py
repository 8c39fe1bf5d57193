"""What a text sets its subject beside rather than says of it: a title's comparison ("… 相当于酒驾", "as dangerous
as drunk driving"), and whether some sentence names a thing plainly, with no comparison word near
("Chagas disease affects more than 6 million people" does; "Like Chagas disease, it …" does not). Read by
the subject model (research/agents/subject.py)."""

from __future__ import annotations

from functools import lru_cache

from research import scripts, textre
from research.agents.words import _PAGE_CHARS
from research.report.sentences import sentence_bounds

# What a title compares its topic with is not its topic: "连续17小时不睡相当于酒驾" is about sleepless driving,
# "… as dangerous as drunk driving" about what comes before. (Markers in English, in Chinese.)
_COMPARISON = textre.compile(r"\bas\s+\w+\s+as\b|\b(?:equivalent|comparable|similar)\s+to\b|\bcompared\s+(?:with|to)\b"
                             r"|\bjust\s+like\b|相当于|等同于|等于|堪比|不亚于|好比|如同", textre.I)


def _before_comparison(title: str) -> str:
    """The title up to what it compares its topic with (all of it where it compares nothing)."""
    match = _COMPARISON.search(title)
    return title[: match.start()] if match and match.start() > 0 else title


# What sets the subject beside another thing in a sentence, rather than saying something of it: "like",
# "unlike", "than", "compared with", "besides", "both"; 之外, 低于, 相比, 不同于, 一样. Closed-class words, in
# English and Chinese (with _COMPARISON's; not 像 alone, which is in 图像).
_BESIDE = textre.compile(r"\b(?:un)?like\b|\bthan\b|\bbesides?\b|\binstead\s+of\b|\balongside\b|\bwhereas\b"
                         r"|\bboth\b|之外|以外|低于|高于|少于|多于|不如|相比|相较|不同于|类似于|就像|好像|一样|而非",
                         textre.I)
# "more than 6 million people", 高于千分之三: a figure compared, not the subject with another thing.
_THAN_A_FIGURE = textre.compile(r"\b(?:more|less|fewer|higher|lower|greater|over|under|longer|shorter|rather)\s+than"
                                r"\s+(?:about\s+|around\s+|nearly\s+|almost\s+)?\$?\d"
                                r"|(?:高于|低于|多于|少于)(?:约|近)?[0-9一二三四五六七八九十百千万两半]", textre.I)
_BESIDE_NEAR = 40  # characters: a comparison word this close to the subject's name sets it beside something



@lru_cache(maxsize=512)
def _plain_mention_of(head: str, text: str) -> bool:
    # The head's stem without its last letters finds its forms ("batteri" → battery, batteries); a Chinese
    # head is looked for whole.
    key = head if scripts.has_han(head) else head[: max(4, len(head) - 2)]
    text = text[:_PAGE_CHARS]
    mention = textre.compile(textre.escape(key))
    for start, end in sentence_bounds(text):  # (the boundaries want the case: a capital starts a sentence)
        sentence = text[start:end].lower()
        spots = [m.start() for m in mention.finditer(sentence)]
        if not spots:
            continue
        figures = [m.span() for m in _THAN_A_FIGURE.finditer(sentence)]
        marks = [m.start() for pattern in (_BESIDE, _COMPARISON) for m in pattern.finditer(sentence)
                 if not any(a <= m.start() < b for a, b in figures)]
        if any(all(abs(mark - spot) > _BESIDE_NEAR for mark in marks) for spot in spots):
            return True
    return False
