"""Updates compiled once (``tooling.prepared``): the claim's and the
end's statements are the ones Django compiles for the same values, compiled
once per connection, and a thread's connection compiles its own."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, cast

import pytest
from django.db import connection
from django.db.models import DateTimeField, Value
from django.db.models.sql import UpdateQuery

from sessions_app import lifecycle, returning
from sessions_app.models import AgentSession
from sessions_app.totals import ending_fields
from tests.sessions_app.factories import AgentSessionFactory
from tooling import prepared
from tooling.models import generation_token

pytestmark = pytest.mark.django_db

Status = AgentSession.Status
NOW = datetime(2026, 11, 24, 12, 0, 0, 123456, tzinfo=UTC)


def plain(params: Any) -> list[Any]:
    """Parameters comparable with ``==`` (psycopg's JSON wrappers hold
    their value in ``obj``)."""
    return [getattr(param, "obj", param) for param in params]


def django_sql(sql: str) -> str:
    """A filter's value compares with ``= %s``, a slot with ``= (%s)``."""
    return sql.replace("(%s)", "%s")


def claim_values() -> dict[str, Any]:
    return {
        "now": NOW,
        "deadline": NOW + timedelta(seconds=900),
        "pk": uuid.uuid4(),
        "max_attempts": 3,
        "token": uuid.uuid4(),
        "lease": NOW + timedelta(seconds=60),
        "worker": "host:123",
    }


def as_django(values: dict[str, Any]) -> dict[str, Any]:
    """The claim's values as Django's own query takes them: plain values,
    ``now`` and the deadline as the expressions the update computes with."""
    return {
        **values,
        "now": Value(values["now"], DateTimeField()),
        "deadline": Value(values["deadline"], DateTimeField()),
    }


@pytest.mark.parametrize("new", [False, True])
def test_the_claim_is_the_update_django_compiles_for_its_values(new: bool) -> None:
    values = claim_values()
    queryset, sets = lifecycle._claim_update(as_django(values), new=new)
    query: Any = queryset.query.chain(UpdateQuery)
    query.add_update_values(sets)
    expected_sql, expected_params = query.get_compiler(connection=connection).as_sql()

    statement = prepared.update(*lifecycle._claim_update(lifecycle._SLOTS, new=new))

    assert django_sql(statement.sql) == django_sql(expected_sql)
    assert plain(prepared.fill(statement.params, values)) == plain(expected_params)


@pytest.mark.skipif(
    not returning.supported(),
    reason="UPDATE ... RETURNING needs SQLite 3.35+ or PostgreSQL",
)
def test_the_claim_returning_is_the_statement_django_compiles() -> None:
    values = claim_values()
    read = {"catalog_token": generation_token()}
    expected = returning.compile_update_returning(
        *lifecycle._claim_update(as_django(values), new=False), read
    )
    statement = returning.compile_update_returning(
        *lifecycle._claim_update(lifecycle._SLOTS, new=False), read
    )

    assert django_sql(statement.sql) == django_sql(expected.sql)
    assert plain(prepared.fill(statement.params, values)) == plain(expected.params)


def test_the_end_is_the_update_django_compiles_for_its_values() -> None:
    session = AgentSessionFactory.create(status=Status.QUEUED)
    claim = lifecycle.claim(session.pk)
    assert claim is not None
    fields = ending_fields(
        status=Status.SUCCEEDED,
        message="done \u202e",
        payload={"k": [1, "x"]},
        output_text="answer",
        session_id=session.pk,
        now=NOW,
        summed={
            "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
            "turns": 2,
            "cost": Decimal("0.25"),
            "unpriced_calls": 0,
        },
    )
    query: Any = AgentSession.objects.filter(claim.mine()).query.chain(UpdateQuery)
    query.add_update_values(fields)
    expected_sql, expected_params = query.get_compiler(connection=connection).as_sql()

    statement = lifecycle._finish_update(fields)
    given = {**fields, "pk": claim.session_id, "token": claim.token}

    # the same assignments and conditions (a NULL is a parameter here)
    assert django_sql(statement.sql).replace(
        '"lease_expires_at" = %s', '"lease_expires_at" = NULL'
    ) == django_sql(expected_sql)
    filled = [p for p in plain(prepared.fill(statement.params, given)) if p is not None]
    assert filled == plain(expected_params)
    # and it ends the run
    assert statement.run(given) == 1
    ended = AgentSession.objects.get(pk=session.pk)
    assert ended.status == Status.SUCCEEDED
    assert ended.error_payload == {"k": [1, "x"]}
    assert ended.lease_expires_at is None
    assert ended.cost == Decimal("0.25")


def test_a_statement_is_compiled_once_per_connection(monkeypatch) -> None:
    compiled = []
    real = returning.compile_update_returning

    def counting(*args: Any, **kwargs: Any) -> Any:
        compiled.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(returning, "compile_update_returning", counting)
    monkeypatch.setattr(connection, prepared._CACHE, {}, raising=False)
    sessions = AgentSessionFactory.create_batch(3, status=Status.QUEUED)
    for session in sessions:
        claim = lifecycle.claim(session.pk)
        assert claim is not None and claim.session.pk == session.pk
    assert len(compiled) == (1 if returning.supported() else 0)


def test_each_value_is_its_own_between_calls() -> None:
    """Two claims through one compiled statement write their own values."""
    first, second = AgentSessionFactory.create_batch(
        2, status=Status.QUEUED, deadline_seconds=900
    )
    early = datetime(2026, 1, 1, tzinfo=UTC)
    late = datetime(2026, 6, 1, tzinfo=UTC)
    one = lifecycle.claim(first.pk, now=early)
    two = lifecycle.claim(second.pk, now=late)
    assert one is not None and two is not None
    assert one.token != two.token
    rows = {
        row.pk: row for row in AgentSession.objects.filter(pk__in=[first.pk, second.pk])
    }
    assert rows[first.pk].claim_token == one.token
    assert rows[first.pk].started_at == early
    assert rows[first.pk].deadline_at == early + timedelta(seconds=900)
    assert rows[second.pk].claim_token == two.token
    assert rows[second.pk].started_at == late
    assert rows[second.pk].deadline_at == late + timedelta(seconds=900)
    # a live lease is not claimed again; an expired one is
    assert lifecycle.claim(first.pk, now=early + timedelta(seconds=1)) is None
    again = lifecycle.claim(first.pk, now=late)
    assert again is not None and again.session.attempts == 2


def test_a_session_id_that_is_no_uuid_is_refused_as_django_refuses_it() -> None:
    """Refused before anything is sent: the caller's transaction goes on (a
    finding of the hostile review of ADR 0017)."""
    from django.core.exceptions import ValidationError
    from django.db import transaction

    session = AgentSessionFactory.create(status=Status.QUEUED)
    with transaction.atomic():
        with pytest.raises(ValidationError):
            lifecycle.claim("not-a-uuid")
        assert not connection.needs_rollback
        with pytest.raises(ValidationError):
            list(AgentSession.objects.filter(pk="not-a-uuid"))
        claim = lifecycle.claim(session.pk)
        assert claim is not None
        with pytest.raises(ValidationError):
            lifecycle.finish(
                dataclasses.replace(claim, token=cast(Any, "not-a-uuid")),
                status=Status.SUCCEEDED,
            )
        assert not connection.needs_rollback
        assert AgentSession.objects.get(pk=session.pk).status == Status.RUNNING


def test_each_thread_compiles_on_its_own_connection() -> None:
    built: list[int] = []

    def build() -> object:
        built.append(threading.get_ident())
        return object()

    here = prepared.compiled(("test", "thread"), build)
    assert prepared.compiled(("test", "thread"), build) is here
    there: list[object] = []
    thread = threading.Thread(
        target=lambda: there.append(prepared.compiled(("test", "thread"), build))
    )
    thread.start()
    thread.join()
    assert len(built) == 2 and built[0] != built[1]
    assert there[0] is not here
