"""The URLconf as a list, so tests over "every URL" cover new URLs automatically."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver, get_resolver


def url_routes(resolver: URLResolver | None = None, prefix: str = "") -> list[tuple[str, str]]:
    """(route, name) for every URL except the admin's model pages (their login form is tested apart)."""
    out: list[tuple[str, str]] = []
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern).startswith("admin/"):
                continue
            ns = f"{entry.namespace}:" if entry.namespace else ""
            out += [(prefix + str(entry.pattern) + route, ns + name) for route, name in url_routes(entry)]
        elif isinstance(entry, URLPattern):
            out.append((prefix + str(entry.pattern), entry.name or ""))
    return out


def fill_route(route: str, objects: dict[str, object]) -> str:
    """A concrete path: each <converter:name> replaced by objects[name] (1 when absent)."""
    return "/" + re.sub(r"<([^>]+)>", lambda m: str(objects.get(m.group(1).split(":")[-1], 1)), route)
