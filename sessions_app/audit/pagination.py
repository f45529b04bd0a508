"""Pagination for append-only audit rows: keyset cursors, strict page sizes
(``tooling.api.pagination.StrictCursorPagination``: a ``page_size`` DRF would
quietly replace with the default is a 400, and the schema says what is
allowed).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from sessions_app.audit.plans import search_order
from tooling.api.pagination import KeysetCursorPagination, StrictCursorPagination


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
