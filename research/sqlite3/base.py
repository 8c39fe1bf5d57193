"""Django's SQLite backend, except that the database file is created 0600 (and tightened to 0600 when it is
ours and looser): it holds sessions and API token hashes. SQLite gives its -wal and -shm files the
database file's mode, so they are private too."""

from __future__ import annotations

from typing import Any

from django.db.backends.sqlite3 import base

from research.runtime import private_file


class DatabaseWrapper(base.DatabaseWrapper):  # type: ignore[misc]
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = str(conn_params.get("database") or "")
        if name and not self.is_in_memory_db() and not name.startswith("file:"):
            private_file(name)
        return super().get_new_connection(conn_params)
