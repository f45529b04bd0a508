"""A list page given a filter it cannot read says so, with the API's status
(400), as the sessions list does: never "No citations match." or "Nothing
waits for approval." when the filter, not the data, is the problem."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("page", "api", "query", "field", "listed", "empty"),
    [
        (
            "sessions_app:citation-list",
            "/api/citations/",
            {"session": "not-a-uuid"},
            "session",
            "citations",
            "No citations match.",
        ),
        (
            "sessions_app:citation-list",
            "/api/citations/",
            {"kind": "\x00"},
            "kind",
            "citations",
            "No citations match.",
        ),
        (
            "sessions_app:session-list",
            "/api/sessions/",
            {"created_at_after": "nope"},
            "created_at_after",
            "sessions",
            "No sessions match these filters.",
        ),
        (
            "sessions_app:session-list",
            "/api/sessions/",
            {"created_at_before": "2026-01-01T00:00:00+20:00"},
            "created_at_before",
            "sessions",
            "No sessions match these filters.",
        ),
        (
            "sessions_app:approval-list",
            "/api/approvals/",
            {"status": "foo"},
            "status",
            "requests",
            "No request matches these filters.",
        ),
        (
            "sessions_app:approval-list",
            "/api/approvals/",
            {"session": "xyz"},
            "session",
            "requests",
            "No request matches these filters.",
        ),
    ],
    ids=str,
)
def test_a_list_page_shows_an_invalid_filter_as_the_api_refuses_it(
    admin_client: Any,
    page: str,
    api: str,
    query: dict[str, str],
    field: str,
    listed: str,
    empty: str,
) -> None:
    answer = admin_client.get(api, query)
    shown = admin_client.get(reverse(page), query)

    assert answer.status_code == 400
    assert shown.status_code == 400
    assert shown.context["filter"].form.errors.keys() == answer.json()["errors"].keys()
    html = shown.content.decode()
    assert f"no {listed} are listed until they are fixed" in html
    assert f"<code>{field}</code>" in html
    assert empty not in html


@pytest.mark.parametrize(
    "page", ["sessions_app:citation-list", "sessions_app:approval-list"]
)
def test_a_valid_filter_keeps_the_page_as_it_was(admin_client: Any, page: str) -> None:
    shown = admin_client.get(reverse(page))

    assert shown.status_code == 200
    assert "are listed until they are fixed" not in shown.content.decode()
