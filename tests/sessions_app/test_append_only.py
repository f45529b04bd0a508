"""Audit rows cannot be changed or deleted, except by the retention command."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from uuid import UUID, uuid4

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.db.models import Model, UUIDField
from django.utils import timezone

from sessions_app.models import (
    AgentSession,
    Citation,
    PolicyDenial,
    ProviderCall,
    QuotaDecision,
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
    UserFactory,
    VirtualFileFactory,
)
from tooling.append_only import PURGE_FLAG_TABLE, AppendOnlyError, purging
from tooling.models import CatalogRevision

pytestmark = pytest.mark.django_db


def quota_decision() -> QuotaDecision:
    return QuotaDecision.objects.create(
        session=AgentSessionFactory.create(),
        turn=1,
        tool_name="web_search",
        kind="web_search",
        used=2,
        limit=2,
    )


def session_purge() -> SessionPurge:
    return SessionPurge.objects.create(
        run_id=uuid4(), older_than=timezone.now(), session_count=0
    )


FACTORIES: dict[type[Model], Callable[[], Model]] = {
    ProviderCall: lambda: CitationFactory.create().provider_call,
    ToolInvocation: ToolInvocationFactory.create,
    PolicyDenial: PolicyDenialFactory.create,
    Citation: CitationFactory.create,
    StateChange: StateChangeFactory.create,
    QuotaDecision: quota_decision,
    SessionPurge: session_purge,
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
    # a UUID as the column holds it (SQLite: 32 hex digits)
    stored = [
        UUIDField().get_db_prep_value(p, connection) if isinstance(p, UUID) else p
        for p in params
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, stored)


# Raw SQL meets a trigger on PostgreSQL and on SQLite alike (migrations
# sessions_app 0004/0010/0011 and 0014, tooling 0006 and 0012).


@pytest.mark.parametrize(
    "statement",
    ["UPDATE {table} SET created_at = CURRENT_TIMESTAMP", "DELETE FROM {table}"],
    ids=["update", "delete"],
)
def test_raw_sql_changes_to_audit_rows_are_refused(audit_row, statement):
    table = type(audit_row)._meta.db_table
    with pytest.raises(DatabaseError, match="append-only"):
        raw(statement.format(table=table))
    assert type(audit_row).objects.filter(pk=audit_row.pk).exists()


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


def test_raw_sql_follows_the_approval_moves():
    table = AgentSession._meta.db_table
    queued = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    with pytest.raises(DatabaseError, match="from queued to awaiting_approval"):
        raw(f"UPDATE {table} SET status = 'awaiting_approval' WHERE id = %s", queued.pk)
    waiting = AgentSessionFactory.create(status=AgentSession.Status.AWAITING_APPROVAL)
    with pytest.raises(DatabaseError, match="from awaiting_approval to running"):
        raw(f"UPDATE {table} SET status = 'running' WHERE id = %s", waiting.pk)
    # a decision queues the run again; queued, it runs; running, it pauses
    for status in ("queued", "running", "awaiting_approval", "cancelled"):
        raw(f"UPDATE {table} SET status = %s WHERE id = %s", status, waiting.pk)
    assert AgentSession.objects.get(pk=waiting.pk).status == "cancelled"


def test_raw_sql_may_still_move_a_session_forward_and_touch_a_live_one():
    table = AgentSession._meta.db_table
    session = AgentSessionFactory.create(status=AgentSession.Status.QUEUED)
    raw(
        f"UPDATE {table} SET status = 'running', worker = 'w' WHERE id = %s",
        session.pk,
    )
    raw(f"UPDATE {table} SET attempts = attempts + 1 WHERE id = %s", session.pk)
    raw(f"UPDATE {table} SET status = 'failed' WHERE id = %s", session.pk)
    # a finished session: writing what it holds changes nothing, and is let be
    raw(f"UPDATE {table} SET status = 'failed' WHERE id = %s", session.pk)
    row = AgentSession.objects.get(pk=session.pk)
    assert (row.status, row.worker, row.attempts) == ("failed", "w", 1)


def test_deleting_a_user_still_unlinks_their_finished_sessions():
    from tests.sessions_app.factories import UserFactory

    user = UserFactory.create()
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED, created_by=user
    )
    user.delete()
    assert AgentSession.objects.get(pk=session.pk).created_by is None


def test_raw_sql_changes_to_revisions_are_refused():
    revision = CatalogRevision.objects.get_or_create_for({"format": 1, "prompt": {}})
    with pytest.raises(DatabaseError, match="append-only: UPDATE refused"):
        raw(
            "UPDATE tooling_catalogrevision SET prompt_ref = 'x' WHERE hash = %s",
            revision.hash,
        )
    with pytest.raises(DatabaseError, match="append-only: DELETE refused"):
        raw("DELETE FROM tooling_catalogrevision WHERE hash = %s", revision.hash)
    assert CatalogRevision.objects.filter(hash=revision.hash).exists()


def test_deleting_a_template_still_unlinks_its_finished_sessions():
    from tests.tooling.factories import PromptTemplateFactory

    template = PromptTemplateFactory.create()
    session = AgentSessionFactory.create(
        status=AgentSession.Status.SUCCEEDED, prompt=template
    )
    template.delete()
    assert AgentSession.objects.get(pk=session.pk).prompt_id is None


def protected_tables() -> list[str]:
    """Every table an append-only trigger guards: the append-only models'
    and the sessions'."""
    from django.apps import apps

    from tooling.append_only import AppendOnlyModel

    models = [m for m in apps.get_models() if issubclass(m, AppendOnlyModel)]
    return sorted([m._meta.db_table for m in models] + [AgentSession._meta.db_table])


def triggers() -> dict[str, str]:
    """The database's triggers: name -> table."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname, tgrelid::regclass::text FROM pg_trigger "
                "WHERE NOT tgisinternal"
            )
        else:
            cursor.execute(
                "SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger'"
            )
        return dict(cursor.fetchall())


def test_every_protected_table_has_its_triggers_after_migrate():
    # a migration that rebuilds one of these tables on SQLite drops its
    # triggers: it must install them again (sessions_app/migrations/0014)
    found = triggers()
    session_table = AgentSession._meta.db_table
    for table in protected_tables():
        names = {name for name, on in found.items() if on == table}
        if connection.vendor == "postgresql":
            suffixes = ["forward_only" if table == session_table else "append_only"]
        elif table == session_table:
            suffixes = ["forward_only_update", "forward_only_delete"]
        else:
            suffixes = ["append_only_update", "append_only_delete"]
        assert {f"{table}_{suffix}" for suffix in suffixes} <= names, table


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's trigger text")
def test_the_sqlite_session_trigger_compares_every_column():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sql FROM sqlite_master WHERE name = %s",
            [f"{AgentSession._meta.db_table}_forward_only_update"],
        )
        (sql,) = cursor.fetchone()
    for field in AgentSession._meta.concrete_fields:
        assert f'NEW."{field.column}" IS NOT OLD."{field.column}"' in sql, field.name


@pytest.mark.django_db(transaction=True)
def test_purging_needs_a_transaction():
    with pytest.raises(RuntimeError, match="needs a transaction"), purging(connection):
        pass


@pytest.mark.django_db(transaction=True)
def test_flush_empties_the_protected_tables_and_leaves_them_guarded():
    # what the test runner does between transactional tests (PostgreSQL:
    # TRUNCATE; SQLite: DELETE inside a purge's flag, wink_project/sqlite3)
    for model, create in FACTORIES.items():
        create()
        assert model._default_manager.exists()
    CatalogRevision.objects.get_or_create_for({"format": 1, "prompt": {}})

    call_command("flush", "--noinput", verbosity=0)

    emptied: list[type[Model]] = [*FACTORIES, AgentSession, CatalogRevision]
    for model in emptied:
        assert not model._default_manager.exists(), model
    row = ToolInvocationFactory.create()
    with pytest.raises(DatabaseError, match="append-only"):
        raw(f"DELETE FROM {ToolInvocation._meta.db_table}")
    assert ToolInvocation.objects.filter(pk=row.pk).exists()
    if connection.vendor == "sqlite":  # the flag was never committed
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {PURGE_FLAG_TABLE}")
            assert cursor.fetchone() == (0,)


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
    # the purge's pass ended with its block
    with pytest.raises(DatabaseError, match="retention command"):
        raw(f"DELETE FROM {AgentSession._meta.db_table} WHERE id = %s", recent.pk)
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {PURGE_FLAG_TABLE}")
            assert cursor.fetchone() == (0,)


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


def test_purge_keeps_todays_sessions_which_count_against_the_daily_budgets(capsys):
    """Purging today's sessions handed their users back the daily budget they
    had spent (the day's spend is read from its sessions; found by hostile
    QA): a cutoff within today stops at its start, and says so."""
    from sessions_app.costs.budgets import day_start, spent_today

    user = UserFactory.create()
    today = old_session(0, cost=Decimal("0.25"), created_by=user)
    yesterday = AgentSessionFactory.create(
        created_at=day_start() - timedelta(seconds=1), created_by=user
    )
    spent = spent_today(user)
    assert spent == Decimal("0.25")

    call_command("purge_sessions", "--older-than", "0d")

    out = capsys.readouterr().out
    assert "Sessions created today are kept" in out and "Purged 1 session(s)" in out
    assert list(AgentSession.objects.values_list("pk", flat=True)) == [today.pk]
    assert not AgentSession.objects.filter(pk=yesterday.pk).exists()
    assert spent_today(user) == spent


def test_purge_names_the_statuses_it_takes(capsys):
    with pytest.raises(CommandError) as refused:
        call_command("purge_sessions", "--older-than", "1d", "--status", "running")
    assert "choose from 'cancelled', 'failed', 'succeeded'" in str(refused.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", "neither a duration"),
        ("2999-01-01T00:00:00Z", "must be in the past"),
        # a traceback (OverflowError) before (found by hostile QA)
        ("99999999999d", "reaches before the year 1"),
        ("3000000d", "reaches before the year 1"),
    ],
)
def test_purge_refuses_bad_cutoffs(value, message):
    with pytest.raises(CommandError, match=message):
        call_command("purge_sessions", "--older-than", value)
