"""How a filtered list whose matches are few is read on PostgreSQL.

A list is read newest first from its ``created_at`` index, each row tested by
the filters until the page is full: quick when matches are frequent, a walk
through most of the table when they are few and old. So a filter that
expects few matches (PostgreSQL's estimate, ``expected_rows``) has them read
from their own index and sorted instead: it orders them by an annotation,
``SEARCH_ORDER``, a copy of ``created_at`` no index orders, which both
paginations sort by when it is there (``search_order``), and the list is read
with sequential scans off (``search_index_plan``). The text search
(``filters.AgentSessionFilterSet.filter_search``, ADR 0028) and the citations'
domain filter (``filters.CitationFilterSet.filter_domain``) do.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections, transaction
from django.db.models import (
    DateTimeField,
    Expression,
    ExpressionWrapper,
    F,
    Lookup,
    QuerySet,
    Value,
)

# Up to this many matching search texts (as PostgreSQL estimates them), a
# search reads them from the trigram index; more, and it reads sessions newest
# first (``filter_search``). About where both cost the same at 100,000
# sessions when the matches are the oldest sessions (ADR 0028).
SEARCH_INDEX_ROWS = 15_000

# Up to this many citations of a domain and its subdomains (as PostgreSQL
# estimates them), the list sorts them (about 1 ms a thousand); more, and
# it reads citations newest first, which stops early when they are frequent.
DOMAIN_SORT_ROWS = 5_000

# A filter whose matches are few orders them by this annotation (a copy of
# ``created_at``: the search text's, or ``unindexed``), so PostgreSQL sorts
# them instead of walking the time index; the pages order by it when it is
# there (``search_order``).
SEARCH_ORDER = "search_created_at"


def search_order(queryset: QuerySet[Any]) -> str:
    """The field a list is ordered by, newest first: ``created_at``, or its
    copy a filter with few matches sorts by."""
    return SEARCH_ORDER if SEARCH_ORDER in queryset.query.annotations else "created_at"


@contextmanager
def search_index_plan(queryset: QuerySet[Any]) -> Iterator[None]:
    """Read ``queryset`` (evaluated inside) the way its filters chose: one
    that sorts its few matches (``SEARCH_ORDER``) runs, on PostgreSQL, in a
    transaction that tells the planner not to read every row instead
    (``enable_seqscan`` off for that transaction only). Anything else is
    read as it is. A rare citation domain does not need it (PostgreSQL reads
    its few matches from the domain indexes anyway); it is read the same way
    so that one rule covers every sorted read.

    PostgreSQL prices ``LIKE`` as one operator whatever the text's length,
    so from about 8,000 expected matches (of 100,000 texts) it prefers
    reading every text, each tested with ``LIKE``: 130-190 ms against 35 ms
    from the index for 9,400 matches (docs/benchmarks.md; 9 ms since the
    matches are sorted inside a view, ADR 0028's second addendum).
    ``filter_search`` takes the index only for at most
    ``SEARCH_INDEX_ROWS`` expected matches, where the index read is always
    the cheaper one.
    """
    database = connections[queryset.db]
    if (
        database.vendor != "postgresql"
        or SEARCH_ORDER not in queryset.query.annotations
    ):
        yield
        return
    with transaction.atomic(using=queryset.db):
        with database.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
        yield


class EqualsAny(Lookup):
    """``lhs = ANY(rhs)``: the left side is one of the right side's array
    (PostgreSQL; a filter's expression, not a registered lookup)."""

    lookup_name = "equals_any"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", [*lhs_params, *rhs_params]


def expected_rows(queryset: QuerySet[Any]) -> float:
    """How many rows PostgreSQL expects ``queryset`` to return (its plan's
    estimate: planned, not run)."""
    plan = json.loads(queryset.explain(format="json"))
    return float(plan[0]["Plan"]["Plan Rows"])


def unindexed(field: str) -> Expression:
    """``field`` (a ``DateTimeField``) plus nothing: the same value, which no
    index orders, so that PostgreSQL sorts the rows it is ordered by."""
    return ExpressionWrapper(
        F(field) + Value(dt.timedelta(0)), output_field=DateTimeField()
    )
