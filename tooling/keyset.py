"""Keyset positions: a row of a list newest first by ``(time, pk)`` named by
its pair, encoded (``encode_position``), read back and checked
(``decode_position``), and the rows beyond it (``beyond``). The HTML lists'
cursors (``sessions_app.audit.paging``) and the API's
(``tooling.api.pagination.KeysetCursorPagination``) are such positions, so a
cursor names one row and rows that share a time are each listed once, either
way (ADR 0030)."""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from tooling.storable_json import loads

Position = tuple[datetime.datetime, Any]


class InvalidCursor(ValueError):
    pass


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
