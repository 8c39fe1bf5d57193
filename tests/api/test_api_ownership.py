"""Every API route over the URLconf, so new routes are covered: an outsider's token gets 404, no token 401."""

from __future__ import annotations

import pytest
from django.test import Client

from research.api import services as token_services
from tests.support.urls import fill_route, url_routes

API = [(route, name) for route, name in url_routes() if name.startswith("api-v1:")]
OBJECT_API = [(route, name) for route, name in API if "<" in route]
PUBLIC = {"api-v1:openapi-json", "api-v1:openapi-view"}
# A well-formed body per route: a malformed one is refused (400/422) before any lookup, whoever asks.
BODIES = {"api-v1:plan_submit": {"base_version": 1}, "api-v1:clarify_answer": {"answers": ["x"]},
          "api-v1:followup_ask": {"question": "x"}, "api-v1:followup_list": {"question": "x"},
          "api-v1:job_create": {"question": "x"}}

pytestmark = pytest.mark.django_db


def test_the_walk_sees_the_api():
    names = {name for _r, name in OBJECT_API}
    assert {"api-v1:job_read", "api-v1:artifact_download", "api-v1:job_events_stream", "api-v1:plan_submit",
            "api-v1:clarify_answer", "api-v1:research_anyway", "api-v1:followup_ask", "api-v1:followup_list",
            "api-v1:followup_fold"} <= names, names


@pytest.mark.parametrize(("route", "name"), OBJECT_API, ids=[n for _r, n in OBJECT_API])
@pytest.mark.parametrize("method", ["get", "post"])
def test_outsider_token_gets_404(charlie, alice_objects, route, name, method):
    _, secret = token_services.token_create(user=charlie, name="outsider")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    url = fill_route(route, alice_objects)
    if method == "post":
        response = client.post(url, BODIES.get(name, {}), content_type="application/json")
    else:
        response = client.get(url)
    assert response.status_code in (404, 405), (name, response.status_code, response.content[:200])
    if response.status_code == 405:
        other = client.post(url, BODIES.get(name, {}), content_type="application/json") if method == "get" \
            else client.get(url)
        assert other.status_code == 404, (name, other.status_code)


@pytest.mark.parametrize(("route", "name"), API, ids=[n for _r, n in API])
def test_no_token_is_401(alice_objects, route, name):
    response = Client().get(fill_route(route, alice_objects))
    if name in PUBLIC:
        assert response.status_code == 200
    elif name == "api-v1:api-root":
        assert response.status_code == 404  # django-ninja serves nothing at the bare prefix
    else:
        assert response.status_code in (401, 405), (name, response.status_code)
