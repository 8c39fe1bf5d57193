"""A path with NUL or another control character is 404 on every route (issue 25: /jobs/<id>/previews/%00 was 500)."""

from __future__ import annotations

import pytest

from tests.support.urls import fill_route, url_routes

pytestmark = [pytest.mark.django_db]

BAD = ["%00", "a%00.png", "%00/x", "x%0A", "%7F", "%1B[31m"]


def _string_routes() -> list[str]:
    """Every route with a str or path parameter (the ones a file name or slug reaches)."""
    return [route for route, _name in url_routes() if "<str:" in route or "<path:" in route or "<slug:" in route]


def test_there_are_string_routes_to_check():
    assert any("previews" in r for r in _string_routes()) and any("files" in r for r in _string_routes())


@pytest.mark.parametrize("bad", BAD)
def test_control_characters_in_a_path_parameter_are_404_everywhere(alice_client, alice_objects, bad):
    for route in _string_routes():
        objects = {k: v for k, v in alice_objects.items()}
        for key in ("name", "path", "slug"):
            objects[key] = bad
        path = fill_route(route, objects)
        response = alice_client.get(path)
        assert response.status_code == 404, (path, response.status_code)


@pytest.mark.parametrize("path", ["/%00", "/jobs/%00/", "/static/%00", "/accounts/login/%00", "/api/v1/jobs/%00",
                                  "/kb/%00/", "/admin/%00"])
def test_control_characters_anywhere_are_404(client, path):
    assert client.get(path).status_code == 404


def test_the_reported_preview_path_is_404_for_its_owner(alice_client, alice_objects):
    job = alice_objects["job_id"]
    assert alice_client.get(f"/jobs/{job}/previews/%00").status_code == 404
    assert alice_client.get(f"/jobs/{job}/files/%00").status_code == 404
