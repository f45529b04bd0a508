"""Pagination for append-only audit rows."""

from rest_framework.pagination import CursorPagination


class CreatedAtCursorPagination(CursorPagination):
    """Newest first on the indexed ``created_at`` (rows are append-only)."""

    ordering = "-created_at"
