"""An ``UPDATE`` of one row that returns the row as updated, in one statement.

A worker's claim is a conditional update followed by reading the session it
claimed; with ``RETURNING`` (PostgreSQL, SQLite 3.35+) both are one round
trip. The statement is Django's own ``UPDATE`` (``QuerySet.update`` builds the
same query), with the model's columns and any annotations appended as
``RETURNING``; the values come back through the fields' converters, as a
``SELECT`` would give them. ``compile_update_returning`` keeps the compiled
statement for a caller that runs it again with other values (``prepared``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import connection, models, transaction
from django.db.models.sql import UpdateQuery

from tooling import prepared

M = TypeVar("M", bound=models.Model)


def supported() -> bool:
    """Whether the database returns rows from an ``UPDATE``."""
    if connection.vendor == "postgresql":
        return True
    if connection.vendor == "sqlite":
        import sqlite3

        return sqlite3.sqlite_version_info >= (3, 35)
    return False


def update_returning(
    queryset: models.QuerySet[M],
    values: Mapping[str, Any],
    annotations: Mapping[str, Any] | None = None,
) -> M | None:
    """``queryset.update(**values)`` on at most one row (filter it by primary
    key), returning that row as updated, with ``annotations`` as attributes;
    ``None`` when no row matched. Requires ``supported()``."""
    statement = compile_update_returning(queryset, values, annotations)
    return statement.run({})


@dataclasses.dataclass(frozen=True)
class UpdateReturning:
    """An ``UPDATE ... RETURNING`` compiled (its parameters may hold
    ``prepared`` slots), with what turns the row it returns into a model."""

    sql: str
    params: tuple[Any, ...]
    model: type[models.Model]
    compiler: Any
    converters: Any
    attnames: tuple[str, ...]
    names: tuple[str, ...]

    def run(self, values: Mapping[str, Any], *, before: str = "") -> Any:
        """Run it with the slots' ``values``: the row as updated, or ``None``.
        ``before``: statements without parameters sent first, in the same
        query (``inserts.one_query()`` must allow it)."""
        params = prepared.fill(self.params, values)  # refused: no rollback due
        with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
            cursor.execute(before + self.sql, params)
            if before:
                cursor.nextset()  # to this statement's rows
            row = cursor.fetchone()
        if row is None:
            return None
        (values_read,) = self.compiler.apply_converters([row], self.converters)
        count = len(self.attnames)
        return prepared.instance(
            self.model,
            self.attnames,
            values_read[:count],
            zip(self.names, values_read[count:], strict=True),
        )


def compile_update_returning(
    queryset: models.QuerySet[Any],
    values: Mapping[str, Any],
    annotations: Mapping[str, Any] | None = None,
) -> UpdateReturning:
    """``update_returning``'s statement, compiled (see ``prepared``)."""
    model = queryset.model
    query: Any = queryset.query.chain(UpdateQuery)
    query.add_update_values(dict(values))
    query.clear_select_clause()
    compiler = query.get_compiler(connection=connection)
    sql, params = compiler.as_sql()
    fields = list(model._meta.concrete_fields)
    table = model._meta.db_table
    returned: list[Any] = [field.get_col(table) for field in fields]
    names = tuple(annotations or {})
    returned += [
        expression.resolve_expression(query, allow_joins=False)
        for expression in (annotations or {}).values()
    ]
    parts: list[str] = []
    returned_params: list[Any] = []
    for expression in returned:
        part, part_params = compiler.compile(expression)
        parts.append(part)
        returned_params.extend(part_params)
    return UpdateReturning(
        sql=f"{sql} RETURNING {', '.join(parts)}",
        params=(*params, *returned_params),
        model=model,
        compiler=compiler,
        converters=compiler.get_converters(returned),
        attnames=tuple(field.attname for field in fields),
        names=names,
    )
