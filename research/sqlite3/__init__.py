"""Django's SQLite backend, with the database file private to its owner (research/sqlite3/base.py)."""
