"""Issue 33, "Input checked and kept": a question with no words is refused (both languages), a long one is
refused whole with its length and the limit, never cut; the form shows the limit and a counter."""

from __future__ import annotations

import lxml.html
import pytest
from django.core.exceptions import ValidationError
from django.utils import translation
from hypothesis import given
from hypothesis import strategies as st

from research.jobs import dispatch, services
from research.jobs.models import ResearchJob
from research.jobs.questions import MAX_QUESTION_CHARS, question_clean, question_has_words

EMOJI_ONLY = "🔥🏠❓💡🤔🌍⚡️🧊"


@pytest.mark.parametrize("text", [EMOJI_ONLY, "???", "— … !!", "🙂 🙂", "\u200b\u200d"])
def test_no_words_is_refused_with_a_clear_message(text):
    with pytest.raises(ValidationError) as exc:
        question_clean(text)
    assert "no words" in exc.value.messages[0]


def test_no_words_message_in_chinese():
    with translation.override("zh-hans"), pytest.raises(ValidationError) as exc:
        question_clean(EMOJI_ONLY)
    assert "没有可以研究的文字" in exc.value.messages[0]


@pytest.mark.parametrize("text", ["热泵怎么样？", "Is 42 the answer?", "🔥 heat pumps 🔥", "ποιος", "2024"])
def test_words_in_any_script_pass(text):
    assert question_clean(f"  {text} ") == text


# Any text made only of symbols, punctuation, marks, spaces and emoji has no words; adding one letter gives it one.
_NO_WORD_CHARS = st.characters(blacklist_categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Cs"))


@given(st.text(_NO_WORD_CHARS, max_size=40), st.sampled_from("a热Ж7"), st.text(_NO_WORD_CHARS, max_size=40))
def test_has_words_is_exactly_one_letter_or_digit(before, letter, after):
    assert not question_has_words(before + after)
    assert question_has_words(before + letter + after)


def test_long_question_is_refused_whole_with_length_and_limit():
    text = "Why? " * 4000  # 20,000 characters
    with pytest.raises(ValidationError) as exc:
        question_clean(text)
    message = exc.value.messages[0]
    assert f"{len(text.strip())} characters" in message and f"limit is {MAX_QUESTION_CHARS}" in message
    assert "nothing was cut" in message


def test_emoji_question_never_becomes_a_job(alice, monkeypatch):
    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    with pytest.raises(ValidationError):
        services.job_create(user=alice, question=EMOJI_ONLY, options={})
    assert not ResearchJob.objects.exists()


def test_form_refuses_emoji_and_long_question_and_keeps_the_text(alice_client):
    page = alice_client.post("/jobs/new/", {"question": EMOJI_ONLY, "style": "academic", "locale": "auto",
                                            "max_steps": 3, "engine": "offline", "web": "on"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "no words to research" in html and EMOJI_ONLY in html
    long = "Why is the sky blue? " * 1000
    page = alice_client.post("/jobs/new/", {"question": long, "style": "academic", "locale": "auto",
                                            "max_steps": 3, "engine": "offline", "web": "on"})
    html = page.content.decode()
    assert page.status_code == 400 and f"limit is {MAX_QUESTION_CHARS}" in html
    assert long.strip() in html  # kept whole in the textarea, to shorten
    assert not ResearchJob.objects.exists()


def _page(response):
    return lxml.html.fromstring(response.content.decode())


def test_form_has_no_maxlength_but_a_counter(alice_client):
    page = _page(alice_client.get("/jobs/new/"))
    (box,) = page.xpath("//textarea[@name='question']")
    assert box.get("maxlength") is None  # the browser would cut a paste silently
    assert box.get("data-max") == str(MAX_QUESTION_CHARS)
    (counter,) = page.xpath("//*[@id='question-count']")
    assert str(MAX_QUESTION_CHARS) in counter.text_content()
    assert page.xpath("//script[contains(@src, 'js/question.js')]")


def test_all_outputs_ticked_by_default(alice_client):
    page = _page(alice_client.get("/jobs/new/"))
    ticked = {box.get("value") for box in page.xpath("//input[@name='outputs'][@checked]")}
    assert ticked == {"pdf", "pptx", "podcast"}  # with report.md, always made: the README's four files


def test_api_refuses_a_question_with_no_words_before_a_job_exists(alice, client, monkeypatch):
    from research.api import services as token_services

    monkeypatch.setattr(dispatch, "send_on_commit", lambda *a: None)
    _token, secret = token_services.token_create(user=alice, name="t")
    response = client.post("/api/v1/jobs", data={"question": EMOJI_ONLY}, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code in (400, 422) and "no words" in response.content.decode()
    assert not ResearchJob.objects.exists()
