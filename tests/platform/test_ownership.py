"""Outsiders: one parametrized test over the URLconf, so new URLs are covered automatically."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from research.jobs import services
from research.jobs.models import Artifact

PUBLIC = {"login", "logout", "signup", "set_language"}


def _patterns(resolver: URLResolver, prefix: str = "") -> list[tuple[str, URLPattern, str]]:
    out = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern).startswith("admin/"):
                continue
            ns = f"{entry.namespace}:" if entry.namespace else ""
            out += [(prefix + str(entry.pattern) + route, p, ns + name) for route, p, name in _patterns(entry)]
        else:
            out.append((str(entry.pattern), entry, entry.name or ""))
    return out


ALL = [(route, name) for route, _p, name in _patterns(get_resolver()) if name.split(":")[-1] not in PUBLIC]
OBJECT_URLS = [(route, name) for route, name in ALL if "<" in route]


@pytest.fixture
def alice_objects(alice, monkeypatch):
    from research.knowledge import services as kb_services

    monkeypatch.setattr(services, "_enqueue_on_commit", lambda *a: None)
    job = services.job_create(user=alice, question="What is the state of heat pumps?", options={})
    Artifact.objects.create(job=job, kind="md", name="report.md", file=f"jobs/{job.pk}/report.md", size=1,
                            sha256="0" * 64)
    collection = kb_services.collection_create(owner=alice, name="notes")
    document = kb_services.document_add(collection=collection, filename="a.txt",
                                        data=b"Heat pumps move heat instead of making it.")
    return {"job_id": job.pk, "number": 1, "name": "report.md", "collection_id": collection.pk,
            "document_id": document.pk, "pk": job.pk}


def _fill(route: str, objects: dict) -> str:
    import re

    def value(match: re.Match[str]) -> str:
        name = match.group(1).split(":")[-1]
        return str(objects.get(name, 1))

    return "/" + re.sub(r"<([^>]+)>", value, route)


def test_every_object_url_is_covered():
    names = {name for _route, name in OBJECT_URLS}
    assert {"job_detail", "job_plan", "artifact_download", "job_events"} <= names
    assert any(n.startswith("knowledge:") for n in names)


@pytest.mark.parametrize(("route", "name"), OBJECT_URLS, ids=[n for _r, n in OBJECT_URLS])
@pytest.mark.parametrize("method", ["get", "post"])
def test_outsider_gets_404(client, charlie, alice_objects, route, name, method):
    client.force_login(charlie)
    response = getattr(client, method)(_fill(route, alice_objects))
    assert response.status_code in (404, 405), (name, response.status_code)
    if response.status_code == 405:  # the method isn't allowed at all: make sure the other one 404s
        other = "post" if method == "get" else "get"
        assert getattr(client, other)(_fill(route, alice_objects)).status_code == 404


@pytest.mark.parametrize(("route", "name"), ALL, ids=[n for _r, n in ALL])
def test_anonymous_is_sent_to_sign_in(client, alice_objects, route, name):
    response = client.get(_fill(route, alice_objects))
    assert response.status_code in (302, 404, 405)
    if response.status_code == 302:
        assert "/accounts/login/" in response["Location"]
