"""Issue 33: a form refused with 429 (too many) or 503 (the counter is down) shows what the user sent,
with a "Try again" button that sends it again; passwords are never written back into a page."""

from __future__ import annotations

from urllib.parse import urlencode

import lxml.html
import pytest

from research import ratelimit

FORM = "application/x-www-form-urlencoded"  # what a browser's form without enctype sends
EDIT = "# My edited report\n\nA paragraph I spent ten minutes on. [1]\n"


def _kept(response) -> lxml.html.HtmlElement:
    (section,) = lxml.html.fromstring(response.content.decode()).xpath("//*[@id='kept-form']")
    return section


def test_a_429_report_edit_keeps_the_markdown(settings, alice_client, alice_objects):
    settings.REPORT_EDIT_RATE = "1/h"
    url = f"/jobs/{alice_objects['job_id']}/report/edit/"
    alice_client.post(url, {"markdown": "# first"})
    response = alice_client.post(url, urlencode({"markdown": EDIT}), content_type=FORM)
    assert response.status_code == 429
    kept = _kept(response)
    (box,) = kept.xpath(".//form[@method='post'][@action=$u]//textarea[@name='markdown']", u=url)
    assert box.text_content() == EDIT
    assert kept.xpath(".//input[@name='csrfmiddlewaretoken']") and kept.xpath(".//button[@id='kept-retry']")


def test_a_429_rerender_keeps_its_choice(settings, alice_client, alice_objects):
    settings.RERENDER_RATE = "1/h"
    url = f"/jobs/{alice_objects['job_id']}/rerender/"
    alice_client.post(url, {"kind": "pdf"})
    response = alice_client.post(url, urlencode({"kind": "pptx"}), content_type=FORM)
    assert response.status_code == 429
    assert _kept(response).xpath(".//input[@type='hidden'][@name='kind']/@value") == ["pptx"]


def test_a_503_keeps_the_edit_too(alice_client, alice_objects, monkeypatch):
    def down(*args, **kwargs):
        raise ratelimit.CounterUnavailable("down")

    monkeypatch.setattr(ratelimit, "ratelimit_request", down)
    response = alice_client.post(f"/jobs/{alice_objects['job_id']}/report/edit/", urlencode({"markdown": EDIT}),
                                 content_type=FORM)
    assert response.status_code == 503
    assert _kept(response).xpath(".//textarea[@name='markdown']")[0].text_content() == EDIT


def test_a_refused_upload_says_the_files_must_be_chosen_again(settings, alice_client, alice_objects):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.KB_UPLOAD_RATE = "1/h"
    url = f"/kb/{alice_objects['collection_id']}/upload/"
    alice_client.post(url, {"files": [SimpleUploadedFile("a.txt", b"one")]})
    response = alice_client.post(url, {"files": [SimpleUploadedFile("b.txt", b"two")]})
    assert response.status_code == 429
    assert "choose them again" in _kept(response).text_content()


@pytest.mark.parametrize("name", ["password", "new_password1", "csrfmiddlewaretoken", "api_token"])
def test_secrets_are_never_written_back(rf, name):
    from research.jobs.templatetags.kept_form import kept_form

    request = rf.post("/accounts/login/", urlencode({name: "s3cret-value", "username": "alice"}),
                      content_type="application/x-www-form-urlencoded")
    kept = kept_form(request)
    assert kept is not None and [f["name"] for f in kept["fields"]] == ["username"]
