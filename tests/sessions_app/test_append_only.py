"""Audit rows cannot be changed or deleted, except by the retention command."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from uuid import UUID

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.db.models import Model
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    SessionPurge,
    StateChange,
    ToolInvocation,
    VirtualFile,
)
from tests.sessions_app.factories import (
    AgentSessionFactory,
    CitationFactory,
    PolicyDenialFactory,
    StateChangeFactory,
    ToolInvocationFactory,
    VirtualFileFactory,
)
from tooling.append_only import AppendOnlyError
from tooling.models import CatalogRevision

pytestmark = pytest.mark.django_db

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="database triggers guard raw SQL on PostgreSQL only (run the suite with "
    "DATABASE_URL=postgres://...)",
)

FACTORIES: dict[type[Model], Callable[[], Model]] = {
    ProviderCall: lambda: CitationFactory.create().provider_call,
    ToolInvocation: ToolInvocationFactory.create,
    PolicyDenial: PolicyDenialFactory.create,
    Citation: CitationFactory.create,
    StateChange: StateChangeFactory.create,
}


@pytest.fixture(params=list(FACTORIES), ids=lambda model: model.__name__)
def audit_row(request):
    return FACTORIES[request.param]()


def test_saving_an_existing_audit_row_is_refused(audit_row):
    with pytest.raises(AppendOnlyError, match="append-only"):
        audit_row.save()


def test_deleting_an_audit_row_is_refused(audit_row):
    with pytest.raises(AppendOnlyError):
        audit_row.delete()
    assert type(audit_row).objects.filter(pk=audit_row.pk).exists()


def test_queryset_update_and_delete_are_refused(audit_row):
    rows = type(audit_row).objects.filter(pk=audit_row.pk)
    with pytest.raises(AppendOnlyError):
        rows.update(created_at=timezone.now())
    with pytest.raises(AppendOnlyError):
        rows.delete()
    with pytest.raises(AppendOnlyError):
        type(audit_row).objects.bulk_update([audit_row], ["created_at"])


def test_sessions_are_neither_saved_again_nor_deleted():
    session = AgentSessionFactory.create()
    with pytest.raises(AppendOnlyError):
        session.save()
    with pytest.raises(AppendOnlyError):
        session.delete()
    with pytest.raises(AppendOnlyError, match="purge_sessions"):
        AgentSession.objects.filter(pk=session.pk).delete()


def test_catalog_revisions_are_append_only():
    revision = CatalogRevision.objects.get_or_create_for({"format": 1, "prompt": {}})
    with pytest.raises(AppendOnlyError):
        revision.save()
    with pytest.raises(AppendOnlyError):
        CatalogRevision.objects.all().delete()


def raw(sql: str, *params: int | str | UUID) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@postgresql_only
@pytest.mark.parametrize(
    "statement",
    ["UPDATE {table} SET created_at = now()", "DELETE FROM {table}"],
    ids=["update", "delete"],
)
def test_raw_sql_changes_to_audit_rows_are_refused(audit_row, statement):
    table = type(audit_row)._meta.db_table
    with pytest.raises(DatabaseError, match="append-only"):
        raw(statement.format(table=table))
    assert type(audit_row).objects.filter(pk=audit_row.pk).exists()


@postgresql_only
def test_raw_sql_cannot_move_a_session_backwards_or_change_a_finished_one():
    session = AgentSessionFactory.create(status=AgentSession.Status.SUCCEEDED)
    table = AgentSession._meta.db_table
    with pytest.raises(DatabaseError, match="back to"):
        raw(f"UPDATE {table} SET status = 'running' WHERE id = %s", session.pk)
    with pytest.raises(DatabaseError, match="can no longer change"):
        raw(f"UPDATE {table} SET output_text = 'forged' WHERE id = %s", session.pk)
    with pytest.raises(DatabaseError, match="retention command"):
        raw(f"DELETE FROM {table} WHERE id = %s", session.pk)
    running = AgentSessionFactory.create(status=AgentSession.Status.RUNNING)
    with pytest.raises(DatabaseError, match="back to"):
        raw(f"UPDATE {table} SET status = 'queued' WHERE id = %s", running.pk)


@postgresql_only
def test_deleting_a_user_still_unlinks_their_finished_sessions():
    from tests.sessions_app.factories import UserFactory

    user = UserFactory.create()
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED, created_by=user
    )
    user.delete()
    assert AgentSession.objects.get(pk=session.pk).created_by is None


@postgresql_only
def test_raw_sql_changes_to_revisions_are_refused():
    revision = CatalogRevision.objects.get_or_create_for({"format": 1, "prompt": {}})
    with pytest.raises(DatabaseError, match="append-only"):
        raw(
            "UPDATE tooling_catalogrevision SET prompt_ref = 'x' WHERE hash = %s",
            revision.hash,
        )


# -- retention ---------------------------------------------------------------------


def old_session(days: int, **fields: object) -> AgentSession:
    session = AgentSessionFactory.create(
        created_at=timezone.now() - timedelta(days=days), **fields
    )
    CitationFactory.create(session=session)
    ToolInvocationFactory.create(session=session)
    PolicyDenialFactory.create(session=session)
    StateChangeFactory.create(session=session)
    VirtualFileFactory.create(session=session)
    return session


def test_purge_removes_old_finished_sessions_whole_and_records_it(capsys):
    old = old_session(100)
    recent = old_session(5)
    running = old_session(100, status=AgentSession.Status.RUNNING)

    call_command("purge_sessions", "--older-than", "90d")

    assert list(AgentSession.objects.values_list("pk", flat=True).order_by("pk")) == (
        sorted([recent.pk, running.pk])
    )
    for model in (ProviderCall, ToolInvocation, PolicyDenial, Citation, StateChange):
        assert not model.objects.filter(session=old).exists()
    assert not VirtualFile.objects.filter(session=old).exists()
    purge = SessionPurge.objects.get()
    assert purge.session_ids == [str(old.pk)]
    assert purge.session_count == 1
    assert purge.row_counts["sessions_app.AgentSession"] == 1
    assert purge.row_counts["sessions_app.ToolInvocation"] == 1
    assert purge.older_than < timezone.now() - timedelta(days=89)
    assert "Purged 1 session(s)" in capsys.readouterr().out
    with pytest.raises(AppendOnlyError):
        purge.delete()


def test_purge_dry_run_and_status_filter(capsys):
    old_session(100, status=AgentSession.Status.FAILED)
    old_session(100, status=AgentSession.Status.SUCCEEDED)

    call_command("purge_sessions", "--older-than", "30d", "--dry-run")
    assert "2 session(s)" in capsys.readouterr().out
    assert AgentSession.objects.count() == 2

    call_command("purge_sessions", "--older-than", "30d", "--status", "failed")
    assert list(AgentSession.objects.values_list("status", flat=True)) == ["succeeded"]


def test_purge_batches_each_record_their_sessions():
    for _ in range(3):
        old_session(100)

    call_command("purge_sessions", "--older-than", "1d", "--batch-size", "2")

    purges = list(SessionPurge.objects.order_by("created_at", "id"))
    assert [p.session_count for p in purges] == [2, 1]
    assert len({p.run_id for p in purges}) == 1
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", "neither a duration"),
        ("2999-01-01T00:00:00Z", "must be in the past"),
    ],
)
def test_purge_refuses_bad_cutoffs(value, message):
    with pytest.raises(CommandError, match=message):
        call_command("purge_sessions", "--older-than", value)
