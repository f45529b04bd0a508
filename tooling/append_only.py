"""Append-only models: rows are created, never changed or deleted through the ORM.

Used by the audit trail and by catalog revisions. ``save()`` of an existing
row, ``Model.delete()``, and the query set's ``update()``, ``delete()`` and
``bulk_update()`` raise ``AppendOnlyError``. On PostgreSQL a trigger refuses
``UPDATE`` and ``DELETE`` too (``refuse_changes_sql``), so raw SQL cannot
change a row either.

The one sanctioned removal is ``purge()``: whole sessions, by the retention
command, inside a transaction that sets ``wink.purge`` (the trigger then lets
the deletes through). Cascading deletes run through Django's collector, which
does not call the overridden methods.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db import models

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
