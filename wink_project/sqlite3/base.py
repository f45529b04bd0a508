"""Django's SQLite backend (``django.db.backends.sqlite3``), subclassed as
Django's documentation describes, for one difference: emptying the tables
(``manage.py flush``, and the test runner between transactional tests) passes
the append-only triggers, as PostgreSQL's ``TRUNCATE`` does there.

SQLite has no ``TRUNCATE``: Django flushes with ``DELETE FROM`` each table,
which the triggers refuse outside a purge. The flush's statements run in one
transaction (``execute_sql_flush``); they are framed here by the purge flag's
row (``tooling.purge_flag``), written first and deleted last, so it is never
committed and nothing else sees it.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.sqlite3 import base, operations

from tooling.purge_flag import (
    PURGE_FLAG_TABLE,
    SQLITE_CLEAR_PURGE_FLAG,
    SQLITE_SET_PURGE_FLAG,
)


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self,
        style: Any,
        tables: Any,
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        statements: list[str] = super().sql_flush(
            style,
            tables,
            reset_sequences=reset_sequences,
            allow_cascade=allow_cascade,
        )
        if not statements or (
            PURGE_FLAG_TABLE not in self.connection.introspection.table_names()
        ):
            return statements  # nothing to flush, or no triggers yet
        return [f"{SQLITE_SET_PURGE_FLAG};", *statements, f"{SQLITE_CLEAR_PURGE_FLAG};"]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
