"""The research question as typed: checked once, for the web form, the CLI, the API and MCP alike.

A question must hold at least one word (a letter or a digit in any script): a row of emoji or punctuation
has nothing to search for, so it is refused before a job exists. A long question is refused with its
length and the limit, never cut: the form shows the same limit and a live counter (static/js/question.js).
"""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

MAX_QUESTION_CHARS = 4000


def question_has_words(text: str) -> bool:
    """True when some character is a letter or a digit (Unicode categories L* and N*), in any script."""
    return any(unicodedata.category(ch)[0] in "LN" for ch in text)


def question_clean(question: str | None) -> str:
    """The question stripped, or a ValidationError whose message says what to do."""
    text = (question or "").strip()
    if not text:
        raise ValidationError(_("Please type a question."), code="required")
    if not question_has_words(text):
        raise ValidationError(_("The question has no words to research (only symbols or emoji). "
                                "Please ask it in words."), code="no_words")
    if len(text) > MAX_QUESTION_CHARS:
        raise ValidationError(
            _("The question is too long (%(n)d characters; the limit is %(limit)d). Shorten it: nothing "
              "was cut.") % {"n": len(text), "limit": MAX_QUESTION_CHARS},
            code="max_length",
        )
    return text
