"""DRF's cursor pagination, refusing a cursor it did not give out.

DRF decodes a cursor leniently: base64 with the characters it does not know
skipped (``?cursor=!!!!`` is the first page, and so is a cursor naming nothing it
knows, ``?cursor=AAAA``), and the position compared to the
ordering field as it is, so a position that is not of the field's type (``abc``
for a sequence number, a time past the last there is) failed in the database:
a 500. ``CheckedCursorPagination`` answers both as DRF answers a cursor it
cannot read: 404 "Invalid cursor".

DRF also quietly replaces a ``page_size`` it cannot use with the default (and
reads none unless told to): ``StrictCursorPagination`` reads it and answers
anything but a whole number from 1 to 500 (ASCII digits only) with a 400, and
the schema says what is allowed.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any
from urllib.parse import parse_qs

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

from tooling.keyset import (
    InvalidCursor,
    Position,
    beyond,
    decode_position,
    encode_position,
)
from tooling.runtime.number_text import whole_number

# What DRF's ``encode_cursor`` writes: the offset, the direction, the position.
CURSOR_TOKENS = frozenset({"o", "r", "p"})


class CheckedCursorPagination(CursorPagination):
    """``CursorPagination`` whose cursor must be base64 and whose position must
    be a value of the first ordering field (see the module docstring)."""

    model: Any = None

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: Any = None
    ) -> list[Any] | None:
        self.model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded:
            try:
                text = base64.b64decode(encoded.encode("ascii"), validate=True)
                tokens = parse_qs(text.decode("ascii"), keep_blank_values=True)
            except ValueError:  # binascii.Error and the Unicode errors are
                raise NotFound(self.invalid_cursor_message) from None
            # DRF gives out no cursor without an offset, a direction or a
            # position (the first page's has no ``cursor`` at all): one that
            # names none of them (``AAAA``, three NUL bytes) or something
            # else was not given out, though DRF would read it as page one.
            if not tokens or not set(tokens) <= CURSOR_TOKENS:
                raise NotFound(self.invalid_cursor_message)
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            self.check_position(str(cursor.position))
        return cursor

    def check_position(self, position: str) -> None:
        """404 unless ``position`` is a value the first ordering field can
        compare (overridden where the position is read otherwise)."""
        ordering = (self.ordering,) if isinstance(self.ordering, str) else self.ordering
        name = ordering[0].lstrip("-")
        try:
            field = (
                self.model._meta.pk
                if name == "pk"
                else self.model._meta.get_field(name)
            )
        except FieldDoesNotExist:  # a lookup or an annotation: as DRF reads it
            if "\x00" in position:  # no database stores it
                raise NotFound(self.invalid_cursor_message) from None
            return
        try:
            if "\x00" in position:  # no database stores it
                raise ValueError(position)
            value = field.to_python(position)
            field.run_validators(value)  # an integer's range
            if isinstance(value, datetime.datetime) and value.tzinfo is not None:
                value.astimezone(datetime.UTC)  # as the database compares it
        except (ValidationError, ValueError, TypeError, OverflowError):
            raise NotFound(self.invalid_cursor_message) from None


MAX_PAGE_SIZE = 500


def page_size(raw: str | None, *, default: int, maximum: int = MAX_PAGE_SIZE) -> int:
    """``raw`` (a query value) as a page size: absent is ``default``; anything
    but a whole number from 1 to ``maximum`` is a 400."""
    if raw is None:
        return default
    size = whole_number(raw)  # ASCII digits: not "1_0", " 5", "+5", U+0665
    if size is None or not 1 <= size <= maximum:
        raise exceptions.ValidationError(
            {"page_size": [f"Enter a whole number from 1 to {maximum}."]}
        )
    return size


class StrictCursorPagination(CheckedCursorPagination):
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        return page_size(
            request.query_params.get(self.page_size_query_param),
            default=self.page_size or MAX_PAGE_SIZE,
            maximum=self.max_page_size,
        )

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
                parameter["description"] = (
                    f"Results per page (1-{self.max_page_size}; "
                    f"{self.page_size} by default)."
                )
        return parameters


class KeysetCursorPagination(StrictCursorPagination):
    """Newest first by a time, ties by key: a keyset on ``(time, pk)``.

    A cursor's position is a row's pair (``keyset.encode_position``, as the
    HTML pages' cursors), and a page is the rows beyond it
    (``keyset.beyond``), so a position names one row. DRF's own cursor names
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
        ``(time, pk)`` (``keyset.decode_position``) and refuses any other."""

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
