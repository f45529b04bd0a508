"""Keyset pages for the HTML lists: newest first by ``(created_at, pk)``
(``keyset_page``; ``KeysetListMixin`` for a filtered ``ListView``).

A page is one query of ``size + 1`` rows after (or before) the position of a
row of the previous page, so the 2,000th page costs what the first does and
nothing counts the table. Links say "newer" and "older", not page numbers.

The cursor is the position, encoded: ``?after=`` older rows, ``?before=``
newer ones. A cursor this module did not give out is a 404.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from django.http import Http404, HttpRequest

from sessions_app.audit.plans import search_index_plan, search_order
from tooling.keyset import (
    InvalidCursor,
    Position,
    beyond,
    decode_position,
    encode_position,
)

# The query parameters of a page: dropped from the links' other filters.
PARAMETERS = ("after", "before", "page")


@dataclasses.dataclass(frozen=True)
class Page:
    rows: list[Any]
    newer: str | None  # the cursor of the newer page, if there is one
    older: str | None  # the cursor of the older page, if there is one
    is_first: bool  # the newest rows (no cursor given)


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
