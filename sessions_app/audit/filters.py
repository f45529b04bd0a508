"""FilterSets for the audit trail, and the allowed-domains check they share.

The FilterSets serve both the API (DjangoFilterBackend: an unparsable value is a
400) and the HTML pages (an empty list). They are strict (``StrictFilterSet``):
a query value a database cannot store is refused, and datetimes are compared
in UTC with offsets PostgreSQL accepts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import django_filters
from django import forms
from django.contrib.auth import get_user_model
from django.contrib.postgres.expressions import ArraySubquery
from django.core.validators import MinLengthValidator, RegexValidator
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery, Value

from sessions_app.audit import plans
from sessions_app.audit.plans import SEARCH_ORDER, EqualsAny, expected_rows, unindexed
from sessions_app.models import (
    AgentSession,
    Citation,
    SessionSearchText,
    ToolInvocation,
    session_duration,
    tool_search_text,
)
from sessions_app.models.search import fold
from tooling.api.input import (
    PlainNumberFilter,
    StrictBooleanFilter,
    StrictFilterSet,
    UtcIsoDateTimeField,
    UtcIsoDateTimeFilter,
)
from tooling.casefold import Folded

# The shortest text search: a trigram index (PostgreSQL) finds nothing
# shorter without reading every row.
SEARCH_MIN_LENGTH = 3
SEARCH_MAX_LENGTH = 200


class PickerDateTimeField(UtcIsoDateTimeField):
    """An ``<input type="datetime-local">`` box: the browser's date picker;
    the value stays ISO 8601, read in UTC."""

    widget = forms.TextInput(attrs={"type": "datetime-local", "step": "1"})


class PickerDateTimeFilter(UtcIsoDateTimeFilter):
    field_class = PickerDateTimeField


DATETIME_HELP = (
    "(ISO 8601, e.g. 2026-11-20T09:30; UTC unless an offset within ±15:59 is given)."
)


def _seconds_filter(label: str, lookup: str, help_text: str) -> Any:
    return PlainNumberFilter(
        method=f"filter_duration_{lookup}",
        label=label,
        min_value=0,
        max_value=10**9,
        help_text=help_text,
        widget=forms.NumberInput(attrs={"step": "any", "min": "0"}),
    )


def _cost_filter(label: str, lookup: str, help_text: str) -> Any:
    return PlainNumberFilter(
        field_name="cost",
        lookup_expr=lookup,
        label=label,
        min_value=0,
        max_value=10**8,
        max_digits=19,  # the largest, 10**8, has 9 digits before the point
        decimal_places=10,
        help_text=help_text,
        widget=forms.NumberInput(attrs={"step": "any", "min": "0"}),
    )


class AgentSessionFilterSet(StrictFilterSet):
    q = django_filters.CharFilter(
        method="filter_search",
        max_length=SEARCH_MAX_LENGTH,
        label="Search",
        help_text="Text in the session's parameters or output, or in the "
        "arguments of one of its tool calls (case-insensitive, at least "
        f"{SEARCH_MIN_LENGTH} characters).",
        validators=[MinLengthValidator(SEARCH_MIN_LENGTH)],
    )
    status = django_filters.ChoiceFilter(choices=AgentSession.Status.choices)
    prompt_ref = django_filters.CharFilter(
        max_length=201,
        label="Prompt",
        help_text='The prompt a session ran, as "namespace/key".',
    )
    prompt = django_filters.CharFilter(
        field_name="prompt_ref",
        lookup_expr="startswith",
        max_length=201,
        label="Prompt starts with",
        help_text='A prefix of the prompt\'s "namespace/key": "support/" '
        "finds every prompt of the support namespace.",
    )
    user = django_filters.CharFilter(
        field_name="created_by__username",
        method="filter_user",
        max_length=150,
        label="User",
        help_text="The username of who started the session: exactly, or in "
        "any case when no username is exactly it.",
    )
    revision = django_filters.CharFilter(
        field_name="revision_id",
        max_length=64,
        label="Revision",
        help_text="The catalog revision's hash (64 hex digits): its runs.",
        validators=[
            RegexValidator(r"^[0-9a-f]{64}$", "Enter a revision's 64-digit hash.")
        ],
    )
    duration_min = _seconds_filter(
        "Ran at least (s)",
        "gte",
        "Finished sessions that ran at least this many seconds (started to finished).",
    )
    duration_max = _seconds_filter(
        "Ran at most (s)",
        "lte",
        "Finished sessions that ran at most this many seconds (started to finished).",
    )
    cost_min = _cost_filter("Cost at least (USD)", "gte", "Spent at least this, USD.")
    cost_max = _cost_filter("Cost at most (USD)", "lte", "Spent at most this, USD.")
    created_at_after = PickerDateTimeFilter(
        field_name="created_at",
        lookup_expr="gte",
        label="Created from",
        help_text=f"Created at or after this {DATETIME_HELP}",
    )
    created_at_before = PickerDateTimeFilter(
        field_name="created_at",
        lookup_expr="lte",
        label="Created until",
        help_text=f"Created at or before this {DATETIME_HELP}",
    )

    class Meta:
        model = AgentSession
        fields = [
            "q",
            "status",
            "prompt_ref",
            "prompt",
            "user",
            "revision",
            "duration_min",
            "duration_max",
            "cost_min",
            "cost_max",
            "created_at_after",
            "created_at_before",
        ]

    def filter_user(self, queryset: Any, name: str, value: str) -> Any:
        # The users' ids as a subquery, not a join: the page is then read
        # newest first from the (created_by, created_at) index. The user of
        # exactly that name; without one, any case: "Alice" finds alice,
        # "ÉLODIE" élodie (two accounts differing by case, neither typed
        # exactly: both). The cost report links its rows, each one user,
        # by the exact name: with "u2" and "U2", each link listed both.
        model = get_user_model()
        users = model.objects.filter(username=value)
        if not users.exists():
            users = model.objects.alias(folded=Folded("username")).filter(
                folded=Folded(Value(value))
            )
        return queryset.filter(created_by__in=Subquery(users.values("pk")))

    def filter_search(self, queryset: Any, name: str, value: str) -> Any:
        """Sessions whose parameters or output hold ``value``, or one of
        whose tool calls' arguments do (case-insensitive, literally).

        Each session's search text (``SessionSearchText``) is tested; while
        a session is in flight its text holds only its parameters and its
        tool calls are tested by their rows. Two plans, chosen by how many
        texts the database expects to match (ADR 0028): few, and the trigram
        index of the texts (PostgreSQL) names them, they are sorted by their
        copy of ``created_at`` (``SEARCH_ORDER``, which the pages order by)
        inside the view ``SearchTextByTime`` reads, and only the page's
        sessions are read; many, and the page is read
        newest first, each session's text tested until the page is full,
        which stops early because matches are frequent. SQLite has no
        trigram index: it always reads newest first.
        """
        value = value.strip()
        if not value:
            return queryset
        folded = fold(value)

        def tool_calls(session: Any) -> QuerySet[ToolInvocation]:
            return (
                ToolInvocation.objects.alias(text=tool_search_text())
                .filter(session=session, text__icontains=value)
                .order_by()
            )

        # A correlated subquery with LIMIT 1: a test of each row read, which
        # PostgreSQL cannot turn into a hashed subplan of every match (as it
        # does an EXISTS under an OR: every tool call of every session read).
        def tool_match(session: Any) -> Subquery:
            return Subquery(tool_calls(session).values("pk")[:1])

        if connection.vendor == "postgresql" and (
            expected_rows(SessionSearchText.objects.filter(text__contains=folded))
            <= plans.SEARCH_INDEX_ROWS
        ):
            # The sessions in flight whose tool calls match (few: those
            # running now) as an array the database reads once, before the
            # page: every condition is then on the view's columns, and
            # PostgreSQL tests them in the view's subquery, before the sort
            # and before a session is read (a subquery per row would keep
            # them outside it).
            in_flight = ArraySubquery(
                SessionSearchText.objects.filter(ended=False)
                .filter(Exists(tool_calls(OuterRef("session_id"))))
                .values("session_id")
            )
            # (Django writes the join LEFT OUTER, the array's test having no
            # say in it; both tests refuse a missing text, so PostgreSQL
            # plans an inner join.)
            return queryset.filter(
                Q(search_by_time__text__contains=folded)
                | EqualsAny(F("search_by_time__session_id"), in_flight)
            ).annotate(**{SEARCH_ORDER: F("search_by_time__created_at")})
        text_match = (
            SessionSearchText.objects.alias(
                search_tool=tool_match(OuterRef("session_id"))
            )
            .filter(
                Q(text__contains=folded) | Q(ended=False, search_tool__isnull=False),
                session=OuterRef("pk"),
            )
            .values("pk")[:1]
        )
        return queryset.alias(search_text_match=Subquery(text_match)).filter(
            search_text_match__isnull=False
        )

    # (``value: Decimal``: the schema then says the parameter is a number)
    def filter_duration_gte(self, queryset: Any, name: str, value: Decimal) -> Any:
        return self._duration(queryset, "gte", value)

    def filter_duration_lte(self, queryset: Any, name: str, value: Decimal) -> Any:
        return self._duration(queryset, "lte", value)

    def _duration(self, queryset: Any, lookup: str, value: Any) -> Any:
        if value is None:
            return queryset
        # An expression index on PostgreSQL (migration 0020).
        seconds = dt.timedelta(seconds=float(value))
        return queryset.alias(ran_for=session_duration()).filter(
            **{f"ran_for__{lookup}": seconds}
        )


class ToolInvocationFilterSet(StrictFilterSet):
    name = django_filters.CharFilter(max_length=64, help_text="The tool's name.")
    native = StrictBooleanFilter(
        help_text="true: provider-run (hosted) calls; false: local function calls."
    )
    success = StrictBooleanFilter(help_text="Whether the call succeeded.")
    kind = django_filters.CharFilter(
        max_length=32, help_text="function, web_search, file_search, mcp ..."
    )

    class Meta:
        model = ToolInvocation
        fields = ["name", "native", "success", "kind"]


class CitationFilterSet(StrictFilterSet):
    domain = django_filters.CharFilter(
        max_length=255,
        method="filter_domain",
        label="Domain",
        help_text="A domain; its subdomains match too.",
    )
    session = django_filters.UUIDFilter(field_name="session_id", label="Session")
    kind = django_filters.CharFilter(
        max_length=32,
        help_text="url_citation, file_citation, container_file_citation, file_path.",
    )

    class Meta:
        model = Citation
        fields = ["domain", "session", "kind"]

    def filter_domain(self, queryset: Any, name: str, value: str) -> Any:
        value = value.strip()
        if not value:
            return queryset
        matches = queryset.for_domain(value)
        if (
            connection.vendor == "postgresql"
            and expected_rows(Citation.objects.for_domain(value).order_by())
            <= plans.DOMAIN_SORT_ROWS
        ):
            # few: read from the domain indexes and sorted (``plans``), not
            # newest first through a year of other domains' citations
            return matches.annotate(**{SEARCH_ORDER: unindexed("created_at")})
        return matches


def normalize_domain(value: str) -> str:
    """``https://Example.com/x`` and ``Example.com.`` both become ``example.com``."""
    value = value.strip().lower()
    if "://" in value:
        value = urlsplit(value).hostname or ""
    return value.split("/", 1)[0].rstrip(".")


def allowed_domains(tools_payload: Any) -> tuple[str, ...] | None:
    """The domains a session's web search was restricted to, or ``None``.

    Reads ``{"type": "web_search", "filters": {"allowed_domains": [...]}}``
    entries of the tools payload the session sent to the provider.
    """
    if not isinstance(tools_payload, list):
        return None
    domains: list[str] = []
    restricted = False
    for tool in tools_payload:
        if not isinstance(tool, dict) or tool.get("type") != "web_search":
            continue
        filters = tool.get("filters")
        listed = filters.get("allowed_domains") if isinstance(filters, dict) else None
        if isinstance(listed, list) and listed:
            restricted = True
            domains.extend(normalize_domain(d) for d in listed if isinstance(d, str))
    return tuple(d for d in domains if d) if restricted else None


def domain_matches(domain: str, allowed: Iterable[str]) -> bool:
    domain = normalize_domain(domain)
    return any(domain == a or domain.endswith(f".{a}") for a in allowed)


def is_outside_allowed_domains(citation: Citation) -> bool:
    """Whether a URL citation points outside its session's web search filter."""
    if citation.kind != "url_citation":
        return False
    allowed = allowed_domains(citation.session.tools_payload)
    if allowed is None:
        return False
    domain = citation.domain or Citation.domain_of(citation.url)
    return not domain_matches(domain, allowed)
