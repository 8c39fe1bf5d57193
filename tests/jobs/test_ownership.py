"""Outsiders: one parametrized test over the URLconf, so new URLs are covered automatically."""

from __future__ import annotations

import pytest

from tests.support.urls import fill_route, url_routes

PUBLIC = {"login", "logout", "signup", "set_language", "healthz"}

# The JSON API authenticates by token, not session: tests/api/test_api_ownership.py walks its routes.
ALL = [(route, name) for route, name in url_routes()
       if name.split(":")[-1] not in PUBLIC and not name.startswith("api-v1:")]
OBJECT_URLS = [(route, name) for route, name in ALL if "<" in route]


def test_every_object_url_is_covered():
    names = {name for _route, name in OBJECT_URLS}
    assert {"job_detail", "job_plan", "artifact_download", "job_events"} <= names
    assert any(n.startswith("knowledge:") for n in names)


@pytest.mark.parametrize(("route", "name"), OBJECT_URLS, ids=[n for _r, n in OBJECT_URLS])
@pytest.mark.parametrize("method", ["get", "post"])
def test_outsider_gets_404(client, charlie, alice_objects, route, name, method):
    client.force_login(charlie)
    response = getattr(client, method)(fill_route(route, alice_objects))
    assert response.status_code in (404, 405), (name, response.status_code)
    if response.status_code == 405:  # the method isn't allowed at all: make sure the other one 404s
        other = "post" if method == "get" else "get"
        assert getattr(client, other)(fill_route(route, alice_objects)).status_code == 404


@pytest.mark.parametrize(("route", "name"), ALL, ids=[n for _r, n in ALL])
def test_anonymous_is_sent_to_sign_in(client, alice_objects, route, name):
    response = client.get(fill_route(route, alice_objects))
    assert response.status_code in (302, 404, 405)
    if response.status_code == 302:
        assert "/accounts/login/" in response["Location"]
