"""Hostile review (h3) of ``returning.update_returning``: the row an
``UPDATE ... RETURNING`` gives equals, value and type, what a ``SELECT`` gives,
on SQLite and PostgreSQL, and its parameters keep their order."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import CharField, F, IntegerField, Subquery, Value
from django.db.models.functions import Concat
from django.utils import timezone

from sessions_app import lifecycle, returning
from sessions_app.models import AgentSession
from tests.sessions_app.factories import AgentSessionFactory
from tooling.models import generation_token

pytestmark = pytest.mark.django_db

Status = AgentSession.Status

ODD_JSON: Any = {
    "null": None,
    "text": "null",
    "pct": "50% of '%s' %(x)s \\ \" \u2028 \U0001f600",
    "nested": [[[[{"a": [1, -0.0, 1e300, 2.5]}]]]],
    "big": 2**62,
    "": "",
}


def _odd_session(**extra: Any) -> AgentSession:
    now = timezone.now()
    fields: dict[str, Any] = {
        "status": Status.QUEUED,
        "deadline_seconds": 900,
        "output_text": "%s %% ; RETURNING *",
        "params": ODD_JSON,
        "tools_payload": [ODD_JSON, "x", 0, None],
        "request_options": {"tool_choice": {"type": "function", "name": "%s"}},
        "output": "just a string",
        "usage": [],
        "error_payload": {"%(a)s": ["%s"]},
        "cost": Decimal("12345678.0123456789"),
        "cost_budget": Decimal("99999999.9999"),
        "dispatched_at": now.replace(microsecond=123456),
        "lease_expires_at": None,
        "claim_token": uuid.uuid4(),
    }
    fields.update(extra)
    return AgentSessionFactory.create(**fields)


def _assert_same_as_select(claimed: AgentSession, annotation: str | None) -> None:
    selected = AgentSession.objects.annotate(catalog_token=generation_token()).get(
        pk=claimed.pk
    )
    for field in AgentSession._meta.concrete_fields:
        got, want = getattr(claimed, field.attname), getattr(selected, field.attname)
        assert got == want, field.name
        assert type(got) is type(want), (field.name, type(got), type(want))
    if annotation is not None:
        got = getattr(claimed, annotation)
        want = getattr(selected, annotation)
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("output", ["just a string", None, {"k": None}, [None], 0])
def test_odd_values_come_back_as_a_select_reads_them(output: Any) -> None:
    session = _odd_session(output=output)
    claim = lifecycle.claim(session.pk)
    assert claim is not None
    _assert_same_as_select(claim.session, "catalog_token")
    assert claim.session.output == output
    # (the stored JSON and Decimal as each database keeps them: compared above)
    started = claim.session.started_at
    assert started is not None and timezone.is_aware(started)


def _update(session: AgentSession, **annotations: Any) -> AgentSession | None:
    # parameters in the WHERE (a subquery), the SET and the RETURNING
    where = AgentSession.objects.filter(
        pk__in=Subquery(
            AgentSession.objects.filter(
                pk=session.pk, output_text__contains="%s"
            ).values("pk")
        ),
        status=Status.QUEUED,
    )
    values = {
        "worker": Value("w%s-1", CharField()),
        "attempts": F("attempts") + 7,
        "error_message": "%(x)s",
    }
    return returning.update_returning(where, values, annotations)


def test_parameters_of_where_set_and_returning_keep_their_order() -> None:
    session = _odd_session()
    claimed = _update(
        session,
        label=Concat(Value("r%s:"), F("worker"), output_field=CharField()),
        seven=Value(7, IntegerField()),
        catalog_token=generation_token(),
    )
    assert claimed is not None
    assert claimed.worker == "w%s-1"
    assert claimed.attempts == session.attempts + 7
    assert claimed.error_message == "%(x)s"
    assert claimed.__dict__["label"] == "r%s:w%s-1"  # the row as updated
    assert claimed.__dict__["seven"] == 7
    _assert_same_as_select(claimed, "catalog_token")


def test_an_update_that_matches_nothing_returns_none_and_changes_nothing() -> None:
    session = _odd_session(status=Status.SUCCEEDED)
    assert _update(session, seven=Value(7, IntegerField())) is None
    stored = AgentSession.objects.get(pk=session.pk)
    assert stored.worker == session.worker and stored.attempts == session.attempts


def test_a_failed_update_inside_atomic_marks_it_for_rollback() -> None:
    session = _odd_session()
    with transaction.atomic():
        with pytest.raises(Exception):  # noqa: B017 (the backend's own error)
            returning.update_returning(
                AgentSession.objects.filter(pk=session.pk),
                {"deadline_seconds": -1}
                if connection.vendor == "postgresql"
                else {"status": Value(None)},  # NOT NULL on both
            )
        assert transaction.get_connection().needs_rollback
    # the block rolled back; the row is as it was
    assert AgentSession.objects.get(pk=session.pk).status == Status.QUEUED


def test_a_claim_in_debug_mode_logs_the_statement(settings) -> None:
    session = _odd_session()
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        claim = lifecycle.claim(session.pk, now=timezone.now() + timedelta(0))
    assert claim is not None
    (statement,) = queries.captured_queries
    assert "RETURNING" in statement["sql"]
    assert str(session.pk).replace("-", "") in statement["sql"].replace("-", "")
