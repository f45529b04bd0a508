"""Pagination for append-only audit rows: keyset cursors, strict page sizes.

DRF quietly replaces a ``page_size`` it cannot use with the default; here it is
a 400, and the schema says what is allowed.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request

from sessions_app.audit.plans import search_order

MAX_PAGE_SIZE = 500


def page_size(raw: str | None, *, default: int, maximum: int = MAX_PAGE_SIZE) -> int:
    """``raw`` (a query value) as a page size: absent is ``default``; anything
    but a whole number from 1 to ``maximum`` is a 400."""
    if raw is None:
        return default
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if not 1 <= size <= maximum:
        raise ValidationError(
            {"page_size": [f"Enter a whole number from 1 to {maximum}."]}
        )
    return size


class StrictCursorPagination(CursorPagination):
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


class CreatedAtCursorPagination(StrictCursorPagination):
    """Newest first on the indexed ``created_at`` (rows are append-only), or
    on the copy of it a filter with few matches sorts them by (a text search,
    a rare citation domain: ``plans.search_order``), ties by key."""

    ordering = "-created_at"

    def get_ordering(
        self, request: Request, queryset: QuerySet[Any], view: Any
    ) -> tuple[str, ...]:
        # Then by key: rows that share a created_at (a provider response's
        # citations all do) must come in one order on every page, or DRF's
        # cursor (the first field's position and an offset within its ties)
        # lists one twice and skips another wherever the database sorts.
        return (f"-{search_order(queryset)}", "-pk")


class SequenceCursorPagination(StrictCursorPagination):
    """A session's tool calls in the order they ran."""

    ordering = "sequence"


class TurnCursorPagination(StrictCursorPagination):
    """A session's provider calls by turn; their bodies can be large, so the
    pages are short."""

    ordering = "turn"
    page_size = 20
