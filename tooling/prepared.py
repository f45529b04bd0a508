"""Statements compiled once per connection and run with their values filled in.

Django compiles a queryset every time it runs it: lookups built, expressions
resolved and compiled, values converted. For the two updates every run sends
(the worker's claim and the run's end) that was about 1.5 ms of a run's CPU,
as much as a provider call costs beside its wait (issue 11, ADR 0017); the two
reads every inline start sends (its template, and the session as it ended)
cost about 0.6 ms more (ADR 0020). Here such a statement is built once, with a
``Slot`` wherever a value is known only when it runs, and compiled by Django's
own compiler; each call fills the slots, every value converted by its field as
Django's compiler converts it (``get_db_prep_save`` in ``SET``,
``get_db_prep_value`` elsewhere), and a read's rows come back through the
fields' converters into instances, as Django's own iteration builds them.
Constants stay compiled in. What a filter compares with a slot is
parenthesised (``"id" = (%s)``, as Django writes any expression there): the
same SQL.

It is an ORM helper of both apps (``sessions_app`` depends on ``tooling``, not
the other way), so it lives here, beside the catalog's other record helpers.

The compiled statements live on the connection (one per thread and alias,
like Django's), keyed by the caller's name and shape: a statement is compiled
once per worker process. What it is built from must not change meanwhile
(settings and anything else that varies are slots).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connection, models, transaction
from django.db.models import Expression
from django.db.models.sql import UpdateQuery

T = TypeVar("T")

_CACHE = "wink_prepared"  # the connection's attribute holding its statements


@dataclasses.dataclass(frozen=True)
class _Hole:
    """A slot's place among a compiled statement's parameters."""

    name: str
    field: models.Field[Any, Any]
    for_save: bool

    def fill(self, values: Mapping[str, Any]) -> Any:
        value = values[self.name]
        if self.for_save:
            return self.field.get_db_prep_save(value, connection=connection)
        if value is None:  # Django compares with IS NULL, compiled in
            raise ValueError(f"A slot outside SET cannot be None ({self.name}).")
        return self.field.get_db_prep_value(value, connection, prepared=False)


class Slot(Expression):
    """A value given when the statement runs (``values[name]``), converted for
    the database as ``field`` converts it."""

    def __init__(self, name: str, field: models.Field[Any, Any]) -> None:
        super().__init__(output_field=field)
        self.name = name
        self.for_save = False

    def resolve_expression(
        self,
        query: Any = None,
        allow_joins: bool = True,
        reuse: Any = None,
        summarize: bool = False,
        for_save: bool = False,
    ) -> Slot:
        slot = self.copy()
        slot.for_save = for_save
        return slot

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        return "%s", [_Hole(self.name, self.output_field, self.for_save)]

    def get_group_by_cols(self) -> list[Any]:
        return []


def slot(model: type[models.Model], field: str, name: str | None = None) -> Slot:
    """A slot named ``name`` (by default the field's name) for a value of
    ``model``'s field ``field``."""
    return Slot(name or field, model._meta.get_field(field))  # type: ignore[arg-type]


def fill(params: Sequence[Any], values: Mapping[str, Any]) -> tuple[Any, ...]:
    """A compiled statement's parameters, with its slots' values."""
    return tuple(
        param.fill(values) if isinstance(param, _Hole) else param for param in params
    )


def compiled(key: Hashable, build: Callable[[], T]) -> T:
    """The statement ``key`` on this connection, built by ``build()`` the
    first time."""
    cache: dict[Hashable, Any] | None = getattr(connection, _CACHE, None)
    if cache is None:
        cache = {}
        setattr(connection, _CACHE, cache)
    statement = cache.get(key)
    if statement is None:
        statement = cache[key] = build()
    return statement


@dataclasses.dataclass(frozen=True)
class Update:
    """An ``UPDATE`` compiled with its slots."""

    sql: str
    params: tuple[Any, ...]

    def run(
        self,
        values: Mapping[str, Any],
        *,
        before: str = "",
        before_params: Sequence[Any] = (),
    ) -> int:
        """Run it with the slots' ``values``; the number of rows updated.
        ``before``: statements sent first in the same query, each ending with
        ``;`` (``inserts.one_query()`` must allow it), with their parameters
        ``before_params``."""
        params = fill(self.params, values)  # a refused value breaks no transaction
        with transaction.mark_for_rollback_on_error(), connection.cursor() as cursor:
            cursor.execute(before + self.sql, (*before_params, *params))
            while before and cursor.nextset():
                pass  # to the last result: this statement's
            return int(cursor.rowcount)


def update(queryset: models.QuerySet[Any], values: Mapping[str, Any]) -> Update:
    """``queryset.update(**values)`` compiled (values and filters may hold
    slots), as ``QuerySet.update`` compiles it."""
    query: Any = queryset.query.chain(UpdateQuery)
    query.add_update_values(dict(values))
    query.annotations = {}
    sql, params = query.get_compiler(connection=connection).as_sql()
    return Update(sql, tuple(params))


def instance(
    model: type[Any],
    attnames: Sequence[str],
    values: Sequence[Any],
    annotations: Iterable[tuple[str, Any]] = (),
) -> Any:
    """The instance of ``model`` a row's converted ``values`` (of the fields
    ``attnames``) make, as Django's iteration builds it (``Model.from_db``),
    with ``annotations`` (name, value) set as attributes."""
    built = model.from_db(connection.alias, list(attnames), values)
    for name, value in annotations:
        setattr(built, name, value)
    return built


@dataclasses.dataclass(frozen=True)
class Select:
    """A ``SELECT`` of one model's rows (and its annotations) compiled with
    its slots, with what turns a row into an instance (``sql`` is ``None``
    for a filter that can match nothing: no query is sent)."""

    sql: str | None
    params: tuple[Any, ...]
    model: type[Any]  # a concrete model (its DoesNotExist, ...)
    compiler: Any
    converters: Any
    columns: slice  # the model's columns in a row
    attnames: tuple[str, ...]
    annotations: tuple[tuple[str, int], ...]  # (name, column)

    def rows(self, values: Mapping[str, Any]) -> list[Any]:
        """The instances of the rows it reads with the slots' ``values``. A
        value refused (by its field or the driver) leaves the caller's
        transaction usable, as Django's own reads do."""
        params = fill(self.params, values)
        if self.sql is None:
            return []
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            found = cursor.fetchall()
        if self.converters:
            found = list(self.compiler.apply_converters(found, self.converters))
        return [
            instance(
                self.model,
                self.attnames,
                row[self.columns],
                [(name, row[column]) for name, column in self.annotations],
            )
            for row in found
        ]

    def get(self, values: Mapping[str, Any]) -> Any:
        """The one row it reads (compile it with ``select_one``), as
        ``QuerySet.get`` returns it: the model's ``DoesNotExist`` without
        one, ``MultipleObjectsReturned`` with more."""
        found = self.rows(values)
        if not found:
            raise self.model.DoesNotExist(
                f"{self.model._meta.object_name} matching query does not exist."
            )
        if len(found) > 1:
            raise self.model.MultipleObjectsReturned(
                f"get() returned more than one {self.model._meta.object_name}."
            )
        return found[0]


def select_one(queryset: models.QuerySet[Any]) -> Select:
    """``queryset.get()`` compiled (run it with ``Select.get``): as
    ``QuerySet.get`` does, without its ordering and reading at most two
    rows."""
    if queryset.query.can_filter() and not queryset.query.distinct_fields:
        queryset = queryset.order_by()
    return select(queryset, limit=2)


def select(queryset: models.QuerySet[Any], *, limit: int | None = None) -> Select:
    """``queryset`` compiled (its filters may hold slots), reading at most
    ``limit`` rows (``None``: all), as iterating it would: the model's
    concrete columns and its annotations (and ``extra()`` columns). Refused
    (``ValueError``), as what it builds would differ from what Django
    builds: ``only()``/``defer()``, ``values()``, ``select_related()``,
    ``prefetch_related()``, ``select_for_update()``, another database."""
    query = queryset.query
    if (
        queryset._prefetch_related_lookups  # type: ignore[attr-defined]
        or query.select_for_update
        or queryset._db not in (None, connection.alias)  # type: ignore[attr-defined]
    ):
        raise ValueError(
            "Only a queryset of whole instances on the default database can be "
            "compiled."
        )
    query = query.chain()
    if limit is not None:
        query.set_limits(high=limit)
    compiler = query.get_compiler(connection=connection)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:  # filter(pk__in=[]): no row, no query
        compiled: tuple[str | None, Sequence[Any]] = (None, ())
        compiler.setup_query()  # the columns, as if it had compiled
    else:
        compiled = (sql, params)
    klass_info = compiler.klass_info
    if klass_info is None or klass_info.get("related_klass_infos"):  # values(), ...
        raise ValueError("Only a queryset of whole instances can be compiled.")
    fields = klass_info["select_fields"]
    columns = slice(fields[0], fields[-1] + 1)
    selected = [column[0] for column in compiler.select[: compiler.col_count]]
    attnames = tuple(column.target.attname for column in selected[columns])
    if set(attnames) != {
        field.attname for field in queryset.model._meta.concrete_fields
    }:
        raise ValueError("Only a queryset of whole instances can be compiled.")
    return Select(
        sql=compiled[0],
        params=tuple(compiled[1]),
        model=queryset.model,
        compiler=compiler,
        converters=compiler.get_converters(selected),
        columns=columns,
        attnames=attnames,
        annotations=tuple(compiler.annotation_col_map.items()),
    )
