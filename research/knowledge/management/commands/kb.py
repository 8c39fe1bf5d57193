"""`manage.py kb add NAME FILE… | list | search NAME QUERY` — knowledge bases for operators.

Contract (docs/architecture.md, "CLI"): `kb add` prints one line per file (added / already
present / rejected: reason) and exits non-zero if any file was rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404

from research.knowledge import selectors, services
from research.knowledge.extract import DocumentRejected, check_size


def resolve_user(username: str | None) -> User:
    """--user, else the first superuser, else "admin", else the only user."""
    users = get_user_model()._default_manager
    if username:
        user = users.filter(**{get_user_model().USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        return user
    superuser = users.filter(is_superuser=True).order_by("pk").first()
    if superuser is not None:
        return superuser
    admin = users.filter(**{get_user_model().USERNAME_FIELD: "admin"}).first()
    if admin is not None:
        return admin
    candidates = list(users.order_by("pk")[:2])
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CommandError("there are no users yet: create one (manage.py createsuperuser) or pass --user")
    raise CommandError("several users and no superuser: say whose knowledge base this is with --user USERNAME")


class Command(BaseCommand):
    help = "Manage knowledge bases: add documents, list collections, search."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=CommandParser)

        add = sub.add_parser("add", help="add files to knowledge base NAME (created if missing)")
        add.add_argument("name")
        add.add_argument("files", nargs="+", metavar="FILE")
        add.add_argument("--user", dest="username", help="owner (default: the first superuser)")

        lst = sub.add_parser("list", help="list knowledge bases and their documents")
        lst.add_argument("--user", dest="username")

        search = sub.add_parser("search", help="search knowledge base NAME")
        search.add_argument("name")
        search.add_argument("query")
        search.add_argument("--user", dest="username")
        search.add_argument("--limit", type=int, default=5)

    def handle(self, *args: Any, **options: Any) -> None:
        user = resolve_user(options.get("username"))
        action = options["action"]
        if action == "add":
            self._add(user, options["name"], options["files"])
        elif action == "list":
            self._list(user)
        else:
            self._search(user, options["name"], options["query"], options["limit"])

    def _add(self, user: User, name: str, paths: list[str]) -> None:
        try:
            collection, created = services.collection_get_or_create(owner=user, name=name)
        except ValidationError as exc:
            raise CommandError(f"invalid knowledge base name {name!r}: {'; '.join(exc.messages)}") from exc
        if created:
            self.stdout.write(f"created knowledge base {collection.name!r} for {user}")

        rejected = 0
        for raw in paths:
            path = Path(raw)
            try:
                # Check the size before reading, so a huge file is refused without loading it.
                check_size(path.stat().st_size)
                document, added = services.document_add_or_get(
                    collection=collection, filename=path.name, data=path.read_bytes()
                )
            except DocumentRejected as exc:
                rejected += 1
                self.stdout.write(f"rejected: {raw}: {exc}")
            except OSError as exc:
                rejected += 1
                self.stdout.write(f"rejected: {raw}: cannot read the file ({exc.strerror or exc})")
            else:
                status = "added" if added else "already present"
                self.stdout.write(
                    f"{status}: {raw} -> {document.kb_url} {document.title!r} ({document.chunk_count} chunks)"
                )
        if rejected:
            raise CommandError(f"{rejected} of {len(paths)} file(s) rejected")

    def _list(self, user: User) -> None:
        collections = selectors.collection_list_for_user(user=user)
        if not collections:
            self.stdout.write(f"{user} has no knowledge bases")
        for collection in collections:
            self.stdout.write(f"{collection.name}\t{getattr(collection, 'document_count', '?')} document(s)")
            for doc in selectors.document_list(collection=collection):
                self.stdout.write(f"  {doc.kb_url}\t{doc.filename}\t{doc.title}\t{doc.chunk_count} chunks")

    def _search(self, user: User, name: str, query: str, limit: int) -> None:
        try:
            collection = selectors.collection_get_by_name(user=user, name=name)
        except Http404:
            raise CommandError(f"{user} has no knowledge base named {name!r}") from None
        hits = selectors.kb_search(user=user, query=query, collection_ids=[collection.pk], limit=limit)
        if not hits:
            self.stdout.write("no matches")
        for hit in hits:
            snippet = " ".join(hit.text.split())[:200]
            self.stdout.write(f"{hit.score:8.3f}  {hit.url}  {hit.document_title}\n          {snippet}")
