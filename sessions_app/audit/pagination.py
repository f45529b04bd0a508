"""Pagination for append-only audit rows: keyset cursors, strict page sizes
(``tooling.api.pagination.StrictCursorPagination``: a ``page_size`` DRF would
quietly replace with the default is a 400, and the schema says what is
allowed).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor
from rest_framework.request import Request

from sessions_app.audit.paging import (
    InvalidCursor,
    Position,
    beyond,
    decode_position,
    encode_position,
)
from sessions_app.audit.plans import search_order
from tooling.api.pagination import StrictCursorPagination


class KeysetCursorPagination(StrictCursorPagination):
    """Newest first by a time, ties by key: a keyset on ``(time, pk)``.

    A cursor's position is a row's pair (``paging.encode_position``, as the
    HTML pages' cursors), and a page is the rows beyond it
    (``paging.beyond``), so a position names one row. DRF's own cursor names
    a time and an offset among the rows that share it, and its ``previous``
    links skipped rows when more shared one than a page holds (a provider
    response's citations all share its ``created_at``;
    encode/django-rest-framework#7709). A cursor of DRF's kind (a time
    alone, as this API gave out before ADR 0030) is refused as any bad
    cursor is (404 "Invalid cursor")."""

    time_field = "created_at"
    # (DRF's attribute, for a reader: ``time_field_of`` decides.)
    ordering = ("-created_at", "-pk")

    def time_field_of(self, queryset: QuerySet[Any]) -> str:
        """The field the list is ordered by, newest first."""
        return self.time_field

    def check_position(self, position: str) -> None:
        """Nothing here: ``paginate_queryset`` reads the position as a row's
        ``(time, pk)`` (``paging.decode_position``) and refuses any other."""

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: Any = None
    ) -> list[Any]:
        self.request = request
        self.page_size = self.get_page_size(request)
        self.base_url = request.build_absolute_uri()
        field = self.time_field_of(queryset)
        self.cursor = self.decode_cursor(request)
        reverse = bool(self.cursor and self.cursor.reverse)
        asked = None if self.cursor is None else self.cursor.position
        position: Position | None = None
        if asked is not None:
            try:
                position = decode_position(str(asked), queryset)
            except InvalidCursor as error:
                raise NotFound(self.invalid_cursor_message) from error
            queryset = queryset.filter(beyond(field, position, newer=reverse))
        order = (field, "pk") if reverse else (f"-{field}", "-pk")
        rows = list(queryset.order_by(*order)[: self.page_size + 1])
        following = len(rows) > self.page_size
        self.page = rows[: self.page_size]
        if reverse:
            self.page.reverse()
        # From a position there are rows on the side it came from.
        self.has_next = position is not None if reverse else following
        self.has_previous = following if reverse else position is not None
        self.display_page_controls = self.has_next or self.has_previous
        # The links' positions: the page's first and last rows; from an empty
        # page (nothing beyond its position), that position.
        if self.page:
            first, last = self.page[0], self.page[-1]
            self.previous_position = encode_position((getattr(first, field), first.pk))
            self.next_position = encode_position((getattr(last, field), last.pk))
        else:
            self.previous_position = self.next_position = (
                None if asked is None else str(asked)
            )
        return self.page

    def get_next_link(self) -> str | None:
        if not self.has_next:
            return None
        return self.encode_cursor(self._cursor(self.next_position, reverse=False))

    def get_previous_link(self) -> str | None:
        if not self.has_previous:
            return None
        return self.encode_cursor(self._cursor(self.previous_position, reverse=True))

    @staticmethod
    def _cursor(position: str | None, *, reverse: bool) -> Cursor:
        # DRF's positions are strings; its type stubs say int.
        return Cursor(offset=0, reverse=reverse, position=position)  # type: ignore[arg-type]


class CreatedAtCursorPagination(KeysetCursorPagination):
    """Newest first on the indexed ``created_at`` (rows are append-only), or
    on the copy of it a filter with few matches sorts them by (a text search,
    a rare citation domain: ``plans.search_order``), ties by key."""

    def time_field_of(self, queryset: QuerySet[Any]) -> str:
        return search_order(queryset)


class SequenceCursorPagination(StrictCursorPagination):
    """A session's tool calls in the order they ran."""

    ordering = "sequence"


class TurnCursorPagination(StrictCursorPagination):
    """A session's provider calls by turn; their bodies can be large, so the
    pages are short."""

    ordering = "turn"
    page_size = 20
