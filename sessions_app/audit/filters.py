"""FilterSets for the audit trail, and the allowed-domains check they share.

The FilterSets serve both the API (DjangoFilterBackend: an unparsable value is a
400) and the HTML pages (an empty list). They are strict (``StrictFilterSet``):
a query value a database cannot store is refused, and datetimes are compared
in UTC with offsets PostgreSQL accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import django_filters
from django.contrib.auth import get_user_model
from django.core.validators import RegexValidator
from django.db.models import Subquery

from sessions_app.models import AgentSession, Citation, ToolInvocation
from tooling.api.input import (
    IsoDateTimeFromToRangeFilter,
    StrictBooleanFilter,
    StrictFilterSet,
)


class AgentSessionFilterSet(StrictFilterSet):
    status = django_filters.ChoiceFilter(choices=AgentSession.Status.choices)
    prompt_ref = django_filters.CharFilter(
        max_length=201, help_text='The prompt a session ran, as "namespace/key".'
    )
    user = django_filters.CharFilter(
        field_name="created_by__username",
        method="filter_user",
        max_length=150,
        label="User",
        help_text="The username of who started the session.",
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
    created_at = IsoDateTimeFromToRangeFilter(
        help_text="Created at or after `created_at_after` and at or before "
        "`created_at_before` (ISO 8601; the UTC offset within ±15:59).",
    )

    class Meta:
        model = AgentSession
        fields = ["status", "prompt_ref", "user", "revision", "created_at"]

    def filter_user(self, queryset: Any, name: str, value: str) -> Any:
        # The user's id as a scalar subquery, not a join: the page is then
        # read newest first from the (created_by, created_at) index.
        user = get_user_model().objects.filter(username=value).values("pk")[:1]
        return queryset.filter(created_by=Subquery(user))


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
        return queryset.for_domain(value) if value else queryset


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
