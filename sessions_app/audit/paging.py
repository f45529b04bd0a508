"""Keyset pages for the HTML lists: newest first by ``(created_at, pk)``
(``keyset_page``; ``KeysetListMixin`` for a filtered ``ListView``).

A page is one query of ``size + 1`` rows after (or before) the position of a
row of the previous page, so the 2,000th page costs what the first does and
nothing counts the table. Links say "newer" and "older", not page numbers.

The cursor is the position, encoded: ``?after=`` older rows, ``?before=``
newer ones. A cursor this module did not give out is a 404.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest

from sessions_app.audit.plans import search_index_plan, search_order
from tooling.storable_json import loads

Position = tuple[datetime.datetime, Any]
# The query parameters of a page: dropped from the links' other filters.
PARAMETERS = ("after", "before", "page")


class InvalidCursor(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Page:
    rows: list[Any]
    newer: str | None  # the cursor of the newer page, if there is one
    older: str | None  # the cursor of the older page, if there is one
    is_first: bool  # the newest rows (no cursor given)


def encode_position(position: Position) -> str:
    created_at, pk = position
    raw = json.dumps([created_at.isoformat(), str(pk)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


# A cursor this module gives out is about 100 characters; one far longer (a
# megabyte of nested brackets) is refused before it is decoded.
CURSOR_MAX_LENGTH = 512


def decode_position(cursor: str, queryset: QuerySet[Any]) -> Position:
    try:
        if len(cursor) > CURSOR_MAX_LENGTH:
            raise ValueError("too long")
        padded = cursor + "=" * (-len(cursor) % 4)
        # (storable_json.loads: nesting too deep for the decoder is a
        # ValueError, not a RecursionError)
        values = loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        if not (
            isinstance(values, list)
            and len(values) == 2
            and all(isinstance(value, str) for value in values)
        ):
            raise ValueError(values)
        created_at = datetime.datetime.fromisoformat(values[0])
        if created_at.tzinfo is None:
            raise ValueError(values[0])
        # in UTC, as the database compares it: 9999-12-31T23:59:59-15:00 is
        # past the last datetime there is (OverflowError)
        created_at = created_at.astimezone(datetime.UTC)
        field = queryset.model._meta.pk
        pk = field.to_python(values[1])
        field.run_validators(pk)  # an integer's range, a text's length
        # As ``encode_position`` writes it: not " 1", an Arabic-Indic 1 or
        # "01" for 1, and no NUL, which PostgreSQL refuses in a text key.
        if str(pk) != values[1] or "\x00" in values[1]:
            raise ValueError(values[1])
    except (
        ValueError,
        TypeError,
        OverflowError,
        binascii.Error,
        ValidationError,
    ) as error:
        raise InvalidCursor("Not a page of this list.") from error
    return created_at, pk


def beyond(field: str, position: Position, *, newer: bool) -> Q:
    """The rows after ``position`` in a list newest first by ``(field, pk)``
    (``newer``: before it). Written so that the database seeks the index of
    ``field`` to the position (``field <= created_at``) and tests the key
    only among the rows that share its ``created_at``."""
    created_at, pk = position
    side = "gt" if newer else "lt"
    return Q(**{f"{field}__{side}e": created_at}) & (
        Q(**{f"{field}__{side}": created_at})
        | Q(**{field: created_at, f"pk__{side}": pk})
    )


def keyset_page(
    queryset: QuerySet[Any],
    *,
    query: Mapping[str, str],
    size: int,
    field: str = "created_at",
) -> Page:
    """The page of ``queryset`` (newest first by ``field``, a creation time:
    ``created_at`` or an annotation equal to it) that ``query``'s ``after``
    or ``before`` cursor names, or the first one. A bad cursor is a 404."""
    after, before = query.get("after"), query.get("before")

    def _position(row: Any) -> Position:
        return getattr(row, field), row.pk

    try:
        if before:
            position = decode_position(before, queryset)
            newer_rows = list(
                queryset.filter(beyond(field, position, newer=True)).order_by(
                    field, "pk"
                )[: size + 1]
            )
            more = len(newer_rows) > size
            rows = newer_rows[:size][::-1]
            return Page(
                rows=rows,
                newer=encode_position(_position(rows[0])) if more else None,
                older=encode_position(_position(rows[-1])) if rows else None,
                is_first=False,
            )
        if after:
            position = decode_position(after, queryset)
            queryset = queryset.filter(beyond(field, position, newer=False))
    except InvalidCursor as error:
        raise Http404(str(error)) from error
    rows = list(queryset.order_by(f"-{field}", "-pk")[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return Page(
        rows=rows,
        newer=encode_position(_position(rows[0])) if after and rows else None,
        older=encode_position(_position(rows[-1])) if more else None,
        is_first=not after,
    )


class KeysetListMixin:
    """A filtered ``ListView`` whose pages are keyset pages (``keyset_page``):
    newest first, no count of the table, any page as fast as the first. The
    view sets ``filterset`` in ``get_queryset``; links keep its filters."""

    page_size = 25
    request: HttpRequest

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        rows = self.object_list  # type: ignore[attr-defined]
        with search_index_plan(rows):  # a search read as it chose
            page = keyset_page(
                rows,
                query=self.request.GET,
                size=self.page_size,
                field=search_order(rows),  # a search's matches by their copy
            )
        context: dict[str, Any] = super().get_context_data(  # type: ignore[misc]
            object_list=page.rows, **kwargs
        )
        query = self.request.GET.copy()
        for name in PARAMETERS:
            query.pop(name, None)
        context.update(
            filter=self.filterset,  # type: ignore[attr-defined]
            page=page,
            query_string=query.urlencode(),
        )
        return context
