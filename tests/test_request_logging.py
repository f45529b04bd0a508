"""A refused request is one line in the web log, not a traceback
(``wink_project/request_logging.py``); a server error keeps its traceback."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
from django.test import Client

from tests.sessions_app.factories import ApprovalRequestFactory, UserFactory
from wink_project.request_logging import ClientErrorsWithoutTraceback


@pytest.mark.django_db
def test_a_403_is_logged_as_a_line(client: Client, caplog: Any) -> None:
    author = UserFactory.create(username="author")
    approval = ApprovalRequestFactory.create(session__created_by=author)
    client.force_login(author)  # sees the request, may not decide it
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.post(
            f"/audit/approvals/{approval.pk}/",
            {"decision": "approve", "confirm": "on"},
        )
    assert response.status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == (
        f"Forbidden (Permission denied): /audit/approvals/{approval.pk}/ "
        "(PermissionDenied: You may not decide this approval.)"
    )
    assert record.exc_info is None
    assert "Traceback" not in caplog.text


def record_of(status: int) -> logging.LogRecord:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "django.request", logging.ERROR, __file__, 1, "x", None, exc_info
    )
    record.status_code = status
    return record


def test_a_server_error_keeps_its_traceback() -> None:
    kept, dropped = record_of(500), record_of(404)
    assert ClientErrorsWithoutTraceback().filter(kept) is True
    assert ClientErrorsWithoutTraceback().filter(dropped) is True
    assert kept.exc_info is not None and dropped.exc_info is None
    assert (kept.getMessage(), dropped.getMessage()) == ("x", "x (RuntimeError: boom)")
