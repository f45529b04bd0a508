"""Django's SQLite backend (``django.db.backends.sqlite3``), subclassed as
Django's documentation describes, for one difference: emptying the tables
(``manage.py flush``, and the test runner between transactional tests) passes
the append-only triggers, as PostgreSQL's ``TRUNCATE`` does there.

SQLite has no ``TRUNCATE``: Django flushes with ``DELETE FROM`` each table,
which the triggers refuse outside a purge. The flush's statements run in one
transaction (``execute_sql_flush``); they are framed here by the purge flag's
row (``tooling.purge_flag``), written first and deleted last, so it is never
committed and nothing else sees it.

Each connection also gets ``tooling.casefold``'s function (SQLite's own
``upper()`` and ``LIKE`` fold ASCII letters only).
"""

from __future__ import annotations

from typing import Any

from django.db.backends.sqlite3 import base, operations

from tooling.casefold import SQLITE_FUNCTION, casefold
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

    def get_new_connection(self, conn_params: Any) -> Any:
        connection = super().get_new_connection(conn_params)
        connection.create_function(SQLITE_FUNCTION, 1, casefold, deterministic=True)
        return connection
