"""Token estimates without a tokenizer.

The app talks to whatever model the operator serves, so it cannot ship the right
tokenizer. These estimates err on the high side: an overestimate only wastes a
little context, an underestimate makes vLLM reject the request.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from research import scripts, textre

# Han, kana, hangul and full-width forms: BPE vocabularies of Qwen-class models spend
# about one token per character on these (often less), so count one each.
_WIDE = textre.compile(f"[{scripts.WIDE}]")
_ASCII_PUNCT = textre.compile(r"[!-/:-@\[-`{-~]")


def estimate_tokens(text: str) -> int:
    """Conservative token count: ~3.6 chars/token for Latin words, punctuation and other
    scripts counted dearer, one token per CJK character."""
    if not text:
        return 0
    n = len(text)
    n_ascii = len(text.encode("ascii", "ignore"))
    n_wide = len(_WIDE.findall(text)) if n_ascii < n else 0
    n_other = n - n_ascii - n_wide
    n_punct = len(_ASCII_PUNCT.findall(text))
    n_plain = n_ascii - n_punct
    return math.ceil(n_plain / 3.6 + n_punct / 1.5 + n_wide + n_other * 0.7) + 1


def truncate_middle(text: str, max_tokens: int, count: Callable[[str], int] = estimate_tokens) -> str:
    """Shorten ``text`` to about ``max_tokens`` keeping its head and tail: the head of a
    page says what it is, the tail often holds conclusions or the end of a JSON blob."""
    total = count(text)
    if total <= max_tokens:
        return text
    keep = int(len(text) * max(max_tokens, 0) / total)
    out = text
    for _ in range(12):
        head = keep * 2 // 3
        tail = keep - head
        dropped = len(text) - head - tail
        out = f"{text[:head]}\n[… truncated {dropped} chars …]\n{text[len(text) - tail :] if tail else ''}"
        if count(out) <= max_tokens or keep == 0:
            return out
        keep = int(keep * 0.85)
    return out
