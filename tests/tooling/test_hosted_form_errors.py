"""The admin's hosted tool form puts a runtime error on the option's own
field, found through the kind's spec alone: by the option's key, or by the
config field it fills when the runtime names that (web search's ``country``
fills ``GeoHint.country_code``; MCP's ``header_env`` fills ``headers``)."""

from __future__ import annotations

from typing import Any

import pytest

from tooling.forms.hosted import HostedToolDefinitionForm, HostedToolFormBase

pytestmark = pytest.mark.django_db


def form(kind: str, fields: dict[str, Any]) -> HostedToolFormBase:
    data = {"name": "hosted", "kind": kind, "description": "D.", **fields}
    return HostedToolDefinitionForm(data=data)


@pytest.mark.parametrize(
    ("kind", "fields", "field", "message"),
    [
        (
            "web_search",
            {"country": "XX"},
            "country",
            "'XX' is not a country: pick one from the list",
        ),
        (
            "web_search",
            {"timezone": "Mars/Olympus"},
            "timezone",
            "'Mars/Olympus' is not an IANA timezone",
        ),
        (
            "mcp",
            {
                "server_label": "docs",
                "server_url": "https://mcp.example.com",
                "header_env": "Authorization=lowercase_var",
            },
            "header_env",
            "needs an environment variable name",
        ),
    ],
)
def test_errors_land_on_the_options_field(
    kind: str, fields: dict[str, Any], field: str, message: str
) -> None:
    bound = form(kind, fields)
    assert not bound.is_valid()
    assert field in bound.errors, bound.errors
    assert message in " ".join(str(e) for e in bound.errors[field])
    assert "__all__" not in bound.errors


def test_a_valid_country_is_stored_under_its_key() -> None:
    bound = form("web_search", {"country": "de", "allow_live_access": "on"})
    assert bound.is_valid(), bound.errors
    assert bound.cleaned_data["config"]["country"] == "DE"
