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
