"""Append-only models: rows are created, never changed or deleted through the ORM.

Used by the audit trail and by catalog revisions. ``save()`` of an existing
row, ``Model.delete()``, and the query set's ``update()``, ``delete()`` and
``bulk_update()`` raise ``AppendOnlyError``. A trigger refuses ``UPDATE`` and
``DELETE`` too, so raw SQL cannot change a row either: on PostgreSQL
(``refuse_changes_sql``) and on SQLite (``sqlite_refuse_changes_sql``).

The one sanctioned removal is ``purge()``: whole sessions, by the retention
command, inside a transaction that ``purging()`` marks (the triggers then let
its deletes through): on PostgreSQL it sets ``wink.purge`` for the
transaction; on SQLite, which has no such settings (and whose triggers cannot
read a connection's temporary tables), it writes the one row of
``PURGE_FLAG_TABLE`` and deletes it again before the transaction commits, so
no other connection ever sees it. Cascading deletes run through Django's
collector, which does not call the overridden methods. Emptying every table
(``manage.py flush``, the test runner between tests) passes too: PostgreSQL's
``TRUNCATE`` fires no row trigger, and the project's SQLite backend
(``wink_project/sqlite3``) flushes inside such a marked transaction.

On SQLite, a migration that rebuilds a protected table (most ``AddField`` and
``AlterField`` operations do) drops its triggers: it must put them back
(``tests/sessions_app/test_append_only.py`` checks that every protected table
has them after ``migrate``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypeVar

from django.db import models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

# The purge flag's statements are re-exported: they lived here first, and the
# migrations import them from here.
from tooling.purge_flag import PURGE_FLAG_TABLE as PURGE_FLAG_TABLE
from tooling.purge_flag import SQLITE_CLEAR_PURGE_FLAG as SQLITE_CLEAR_PURGE_FLAG
from tooling.purge_flag import SQLITE_CREATE_PURGE_FLAG as SQLITE_CREATE_PURGE_FLAG
from tooling.purge_flag import SQLITE_DROP_PURGE_FLAG as SQLITE_DROP_PURGE_FLAG
from tooling.purge_flag import SQLITE_NOT_PURGING as SQLITE_NOT_PURGING
from tooling.purge_flag import SQLITE_SET_PURGE_FLAG as SQLITE_SET_PURGE_FLAG

M = TypeVar("M", bound=models.Model)

PURGE_SETTING = "wink.purge"


class AppendOnlyError(Exception):
    """A change to an append-only row was attempted."""


class AppendOnlyQuerySet(models.QuerySet[M]):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError(
            f"{self.model._meta.label} rows are append-only: update() is refused."
        )

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AppendOnlyError(
            f"{self.model._meta.label} rows are append-only: bulk_update() is refused."
        )

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(
            f"{self.model._meta.label} rows are append-only: delete() is refused; "
            "remove whole sessions with the purge_sessions command."
        )

    delete.alters_data = True  # type: ignore[attr-defined]
    delete.queryset_only = True  # type: ignore[attr-defined]


class AppendOnlyModel(models.Model):
    """An abstract model whose rows cannot be changed once saved."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(
                f"{self._meta.label} rows are append-only: saving an existing row "
                "is refused."
            )
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(
            f"{self._meta.label} rows are append-only: delete() is refused."
        )


REFUSE_CHANGES_FUNCTION = f"""
CREATE OR REPLACE FUNCTION wink_refuse_audit_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('{PURGE_SETTING}', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% rows are append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'raise_exception',
              HINT = 'Remove whole sessions with manage.py purge_sessions.';
END;
$$ LANGUAGE plpgsql;
"""

DROP_REFUSE_CHANGES_FUNCTION = "DROP FUNCTION IF EXISTS wink_refuse_audit_change();"


def refuse_changes_sql(table: str) -> str:
    """The trigger that makes ``table`` append-only (PostgreSQL)."""
    return (
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION wink_refuse_audit_change();"
    )


def drop_refuse_changes_sql(table: str) -> str:
    return f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};"


def postgresql_only(*statements: str) -> Any:
    """A migration operation that runs ``statements`` on PostgreSQL only."""

    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            for statement in statements:  # no parameters: '%' is plpgsql's own
                cursor.execute(statement)

    return run


@contextlib.contextmanager
def purging(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """Inside a transaction: its deletes pass the append-only triggers until
    the block ends (PostgreSQL: ``wink.purge``, set ``LOCAL`` to the
    transaction; SQLite: the flag row, written and deleted in the transaction,
    so never committed). The pass ends with the block even inside a larger
    transaction."""
    if not connection.in_atomic_block:
        raise RuntimeError("purging() needs a transaction (transaction.atomic()).")
    if connection.vendor == "postgresql":
        start = f"SET LOCAL {PURGE_SETTING} = 'on'"
        end = f"SET LOCAL {PURGE_SETTING} = 'off'"
    elif connection.vendor == "sqlite":
        start, end = SQLITE_SET_PURGE_FLAG, SQLITE_CLEAR_PURGE_FLAG
    else:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute(start)
    try:
        yield
    finally:
        # a transaction marked for rollback loses the pass with the rest
        if not transaction.get_rollback(using=connection.alias):
            with connection.cursor() as cursor:
                cursor.execute(end)


# -- SQLite -------------------------------------------------------------------------


def sqlite_refuse_changes_sql(table: str) -> list[str]:
    """The triggers that make ``table`` append-only on SQLite, with the
    messages of PostgreSQL's (``wink_refuse_audit_change``). ``RAISE(ABORT)``
    undoes the statement; Django raises it as an ``IntegrityError``."""
    return [
        f"CREATE TRIGGER {table}_append_only_update BEFORE UPDATE ON {table} "
        f"BEGIN SELECT RAISE(ABORT, '{table} rows are append-only: UPDATE "
        "refused'); END",
        f"CREATE TRIGGER {table}_append_only_delete BEFORE DELETE ON {table} "
        f"WHEN {SQLITE_NOT_PURGING} "
        f"BEGIN SELECT RAISE(ABORT, '{table} rows are append-only: DELETE "
        "refused'); END",
    ]


def sqlite_drop_refuse_changes_sql(table: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {table}_append_only_update",
        f"DROP TRIGGER IF EXISTS {table}_append_only_delete",
    ]


def sqlite_only(*statements: str) -> Any:
    """A migration operation that runs ``statements`` on SQLite only."""

    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "sqlite":
            return
        with schema_editor.connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)

    return run
