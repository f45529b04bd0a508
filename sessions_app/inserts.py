"""A step's rows written in the fewest round trips (``steps.py`` decides when).

``write(batches)`` writes each batch (rows of one model, or upserts of one
model) as one ``INSERT``, all of them atomically:

- on PostgreSQL the statements travel together, in one round trip: Django's
  psycopg cursors bind parameters on the client, so several statements go as
  one simple-protocol query, which the server runs as one implicit
  transaction (inside an open transaction, as part of it). No ``BEGIN``, no
  ``COMMIT``, no savepoint: a step of four rows costs one round trip instead
  of six (ADR 0016);
- elsewhere (SQLite, or PostgreSQL with ``server_side_binding``, which sends
  one statement at a time), the same statements one after the other in one
  transaction (no round trips to save, but no statement compiled again);
- for batches whose rows point at rows the database has yet to give a key
  (a provider call and its citations need the call's id first; a session and
  its content-hashed revision can go together) and for more than
  ``MAX_ROWS_TOGETHER`` rows, one ``bulk_create`` per batch in one
  transaction, as Django writes them.

The statements are Django's own (``InsertQuery``, as ``bulk_create`` builds
them): fields' ``pre_save`` (``auto_now_add``), their database conversion and
``ON CONFLICT ... DO UPDATE`` are Django's, only the sending is batched. The
text of a single-row statement of plain values does not depend on the values,
so it is compiled once per shape and reused, with each row's values converted
by its fields as the compiler converts them.
Rows written as statements get no primary key back (nothing reads it: audit
rows are not changed once written).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, cast

from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    connection,
    connections,
    models,
    transaction,
)
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery

# Above this many rows a step is written by ``bulk_create`` (one statement per
# model and batch): a single query string stays a reasonable size.
MAX_ROWS_TOGETHER = 500


@dataclasses.dataclass(frozen=True)
class Batch:
    """Rows of one model for one ``INSERT``; an upsert when ``update_fields``
    (on a conflict over ``unique_fields``, those fields take the new values);
    ``ignore_conflicts``: a row that conflicts with one already there is left
    out (``ON CONFLICT DO NOTHING``: content-addressed rows)."""

    model: type[models.Model]
    rows: list[models.Model]
    unique_fields: tuple[str, ...] = ()
    update_fields: tuple[str, ...] = ()
    ignore_conflicts: bool = False


def write(batches: Sequence[Batch]) -> None:
    """Write every batch, atomically, in the fewest round trips."""
    batches = [batch for batch in batches if batch.rows]
    if not batches:
        return
    if _together(batches):
        _write_together(batches)
        return
    if _plain(batches):  # one statement at a time, each text compiled once
        with transaction.atomic(savepoint=False), connection.cursor() as cursor:
            for batch in batches:
                for sql, params in _statements(batch):
                    cursor.execute(sql, params)
        written(batches)
        return
    with transaction.atomic(savepoint=False):
        for batch in batches:
            manager = batch.model._default_manager
            if batch.ignore_conflicts:
                manager.bulk_create(batch.rows, ignore_conflicts=True)
            elif batch.update_fields:
                manager.bulk_create(
                    batch.rows,
                    update_conflicts=True,
                    unique_fields=batch.unique_fields,
                    update_fields=batch.update_fields,
                )
            else:
                manager.bulk_create(batch.rows)


def write_after(earlier: Sequence[Batch], batches: Sequence[Batch]) -> None:
    """``earlier`` and then ``batches``, in one query where they can go
    together; if that fails, ``earlier`` is written alone before the error
    is raised (what it records stands whatever came after). Where they
    cannot go together, ``earlier`` is written first, each atomically."""
    query = together([*earlier, *batches]) if batches else None
    if query is None:
        write(earlier)
        write(batches)
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute(*query)
    except Exception:
        with contextlib.suppress(DatabaseError):
            write(earlier)
        raise
    written([*earlier, *batches])


def one_query() -> bool:
    """Whether several statements can go as one query here: PostgreSQL with
    Django's client-side binding (see the module docstring)."""
    return connection.vendor == "postgresql" and not connection.settings_dict.get(
        "OPTIONS", {}
    ).get("server_side_binding")


def _together(batches: Sequence[Batch]) -> bool:
    """Whether the batches can go as one query (see the module docstring)."""
    return one_query() and _plain(batches)


def _plain(batches: Sequence[Batch]) -> bool:
    """Whether the batches can be written as their statements, without
    ``bulk_create``: not too many rows, and none that needs a key the
    database gives another row written with it."""
    if sum(len(batch.rows) for batch in batches) > MAX_ROWS_TOGETHER:
        return False
    # rows that point at rows written with them need the keys the database
    # gives those (read back by ``bulk_create``); a key set beforehand (a
    # content hash, a UUID) can go together
    keyless = {
        batch.model for batch in batches if any(row.pk is None for row in batch.rows)
    }
    return not any(
        field.related_model in keyless
        for batch in batches
        for field in batch.model._meta.concrete_fields
        if field.is_relation
    )


def together(batches: Sequence[Batch]) -> tuple[str, list[Any]] | None:
    """The batches' statements as the text and parameters of one query (to
    send with others: ``lifecycle.finish`` sends a run's last rows with its
    end), or ``None`` when they cannot go together here; ``written()`` once
    the query succeeded."""
    batches = [batch for batch in batches if batch.rows]
    if not _together(batches):
        return None
    sqls: list[str] = []
    params: list[Any] = []
    for batch in batches:
        for sql, batch_params in _statements(batch):
            sqls.append(sql)
            params.extend(batch_params)
    return ";\n".join(sqls), params


def written(batches: Sequence[Batch]) -> None:
    """Mark the rows of ``batches`` as saved (``together()``'s query ran)."""
    for batch in batches:
        for row in batch.rows:
            row._state.adding = False
            row._state.db = connection.alias


def _write_together(batches: Sequence[Batch]) -> None:
    query = together(batches)
    assert query is not None
    with connection.cursor() as cursor:
        cursor.execute(*query)
    written(batches)


def _statements(batch: Batch) -> list[tuple[str, Sequence[Any]]]:
    """The ``INSERT`` Django's ``bulk_create`` would send for ``batch``
    (without ``RETURNING``: nothing reads the ids back), or one per row
    where each row's text is the cached one of its shape (``_statement``)."""
    opts = batch.model._meta
    with_pk: list[models.Model] = []
    without_pk: list[models.Model] = []
    for row in batch.rows:
        cast(Any, row)._prepare_related_fields_for_save(operation_name="bulk_create")
        if row.pk is None:
            row.pk = cast(Any, opts.pk).get_pk_value_on_save(row)  # a default, if any
        (without_pk if row.pk is None else with_pk).append(row)
    statements: list[tuple[str, Sequence[Any]]] = []
    for rows, keyed in ((with_pk, True), (without_pk, False)):
        if rows:
            statements.extend(_statement(batch, rows, _columns(batch.model, keyed)))
    return statements


_NONE = type(None)
# Values a field of exactly this class leaves as they are when it converts
# them for PostgreSQL and SQLite (``get_db_prep_save``; tested): most of a
# step's values, passed on without the call. A subclass may convert, so it
# is asked, as is any other value (integers too: psycopg's typed wrappers).
PLAIN: dict[type[models.Field[Any, Any]], tuple[type, ...]] = {
    models.CharField: (str, _NONE),
    models.TextField: (str, _NONE),
    models.BooleanField: (bool, _NONE),
    models.FloatField: (float, _NONE),
}


@dataclasses.dataclass(frozen=True, eq=False)  # one per shape: hashed by identity
class _Columns:
    """The columns of a model's ``INSERT`` and, for each, the values passed
    on as they are (``PLAIN``)."""

    fields: list[models.Field[Any, Any]]
    plain: list[tuple[type, ...]]


@functools.cache
def _columns(model: type[models.Model], keyed: bool) -> _Columns:
    """Every concrete field of ``model`` but generated ones, and without an
    automatic key unless the rows are ``keyed``."""
    fields = [
        field
        for field in model._meta.concrete_fields
        if not field.generated and (keyed or not isinstance(field, models.AutoField))
    ]
    return _Columns(fields, [PLAIN.get(type(field), ()) for field in fields])


# The text of single-row statements by shape (columns, conflict target): built
# once by Django's compiler, reused with each row's values.
_TEXTS: dict[tuple[Any, ...], str] = {}


def _statement(
    batch: Batch, rows: list[models.Model], columns: _Columns
) -> list[tuple[str, Sequence[Any]]]:
    """The ``INSERT`` of ``rows``: one per row where every row holds plain
    values, each reusing the text Django's compiler gave the first row of its
    shape (its placeholders do not depend on the values then) with the values
    converted as the compiler converts them (each field's ``pre_save`` and
    ``get_db_prep_save``); compiling a statement costs more than the server
    spends on a few more. Rows with expressions are compiled whole, in one
    statement."""
    fields = columns.fields
    values = [[field.pre_save(row, True) for field in fields] for row in rows]
    if any(hasattr(v, "resolve_expression") for vs in values for v in vs):
        return [_compiled(batch, rows, fields)]
    key = (columns, batch.unique_fields, batch.update_fields, batch.ignore_conflicts)
    db = connections[DEFAULT_DB_ALIAS]  # not the proxy: each field reads it
    kinds = list(zip(fields, columns.plain, strict=True))
    statements: list[tuple[str, Sequence[Any]]] = []
    for row, row_values in zip(rows, values, strict=True):
        text = _TEXTS.get(key)
        if text is None:
            text, params = _compiled(batch, [row], fields)
            if not any(hasattr(field, "get_placeholder") for field in fields):
                _TEXTS[key] = text
            statements.append((text, params))
            continue
        statements.append(
            (
                text,
                [
                    value
                    if type(value) in plain
                    else field.get_db_prep_save(value, connection=db)
                    for (field, plain), value in zip(kinds, row_values, strict=True)
                ],
            )
        )
    return statements


def _compiled(
    batch: Batch, rows: list[models.Model], columns: list[models.Field[Any, Any]]
) -> tuple[str, Sequence[Any]]:
    opts = batch.model._meta
    query = InsertQuery(
        batch.model,
        on_conflict=(
            OnConflict.UPDATE
            if batch.update_fields
            else OnConflict.IGNORE
            if batch.ignore_conflicts
            else None
        ),
        update_fields=[opts.get_field(name) for name in batch.update_fields],
        unique_fields=[opts.get_field(name) for name in batch.unique_fields],
    )
    query.insert_values(columns, rows)
    ((sql, params),) = query.get_compiler(connection=connection).as_sql()
    return sql, params
