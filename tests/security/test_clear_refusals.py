"""Refusals say why: an upload with no file, and a plan post with more fields than Django reads."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db]


def test_upload_without_a_file_says_so(alice_client, alice_objects):
    url = f"/kb/{alice_objects['collection_id']}/upload/"
    response = alice_client.post(url, {}, follow=True)
    assert "Choose at least one file." in response.content.decode()


def test_an_oversized_plan_post_gets_a_readable_400(alice, alice_objects, settings):
    settings.DEBUG = False
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    token = "a" * 32
    client.cookies["csrftoken"] = token
    fields = {"op": "accept", "csrfmiddlewaretoken": token}
    for n in range(500):  # a 500-step plan: ~5 fields a step
        fields.update({f"form-{n}-title": f"Step {n}", f"form-{n}-description": "d", f"form-{n}-type": "research",
                       f"form-{n}-id": f"s{n}", f"form-{n}-depends_on": ""})
    response = client.post(f"/jobs/{alice_objects['job_id']}/plan/", fields)
    body = response.content.decode()
    assert response.status_code == 400
    assert "more than 1000 fields" in body and "at most" in body and "steps" in body
