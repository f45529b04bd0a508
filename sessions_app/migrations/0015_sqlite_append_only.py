"""Audit rows become append-only on SQLite too, as 0004, 0010 and 0011 made
them on PostgreSQL: the embedded default keeps the same promise against raw SQL.

Every audit table refuses ``UPDATE`` and ``DELETE`` (deletes pass inside a
purge: ``tooling.append_only.purging``); the session table refuses a status
that moves backward or out of ``awaiting_approval`` other than to ``queued`` or
``cancelled``, any change to a finished session (other than its user and
template links becoming NULL when those are deleted), and deletes outside a
purge. The messages are PostgreSQL's, without the session's id (SQLite's
``RAISE`` takes a fixed text).

SQLite drops a table's triggers when a migration rebuilds the table (most
``AddField`` and ``AlterField`` operations do), and the session trigger names
the table's columns: a later migration that rebuilds one of these tables runs
``install`` again (``importlib.import_module`` this module, as 0011 reads
0004); ``tests/sessions_app/test_append_only.py`` fails until it does.
"""

import importlib

from django.db import migrations

from tooling.append_only import (
    SQLITE_NOT_PURGING,
    sqlite_drop_refuse_changes_sql,
    sqlite_refuse_changes_sql,
)

AUDIT_TABLES = [
    *importlib.import_module("sessions_app.migrations.0004_append_only").AUDIT_TABLES,
    "sessions_app_quotadecision",  # 0010
]
SESSION_TABLE = "sessions_app_agentsession"
UPDATE_TRIGGER = f"{SESSION_TABLE}_forward_only_update"
DELETE_TRIGGER = f"{SESSION_TABLE}_forward_only_delete"

STATUSES = (
    "queued",
    "running",
    "awaiting_approval",
    "succeeded",
    "failed",
    "cancelled",
)
FINISHED = ("succeeded", "failed", "cancelled")
# the order statuses move in (PostgreSQL's CASE: anything else is 2)
RANK = {"queued": 0, "running": 1}
# links a finished session may lose (SET NULL when the row they name goes)
UNLINKED = ("prompt_id", "created_by_id", "cancelled_by_id")


def refusal(old, new):
    """Why PostgreSQL's ``wink_session_forward_only`` (0011) refuses moving
    a session from ``old`` to ``new`` before it compares the rest of the row,
    ``None`` if it does not."""
    if new == "awaiting_approval" and old not in ("running", "awaiting_approval"):
        return f"session cannot move from {old} to awaiting_approval"
    if old == "awaiting_approval":
        if new not in ("awaiting_approval", "queued", "cancelled"):
            return f"session cannot move from awaiting_approval to {new}"
    elif new != "awaiting_approval" and RANK.get(new, 2) < RANK.get(old, 2):
        return f"session cannot move from {old} back to {new}"
    return None


def session_trigger_sql(columns):
    """The session table's triggers on SQLite, for a table of ``columns``."""
    moves = [
        f"WHEN OLD.status = '{old}' AND NEW.status = '{new}' "
        f"THEN RAISE(ABORT, '{reason}')"
        for old in STATUSES
        for new in STATUSES
        if old != new and (reason := refusal(old, new)) is not None
    ]
    changed = " OR ".join(
        f'(NEW."{column}" IS NOT NULL AND NEW."{column}" IS NOT OLD."{column}")'
        if column in UNLINKED
        else f'NEW."{column}" IS NOT OLD."{column}"'
        for column in columns
    )
    finished = ", ".join(f"'{status}'" for status in FINISHED)
    no_change = " ".join(
        f"WHEN '{status}' THEN RAISE(ABORT, 'session is {status} and can no "
        "longer change')"
        for status in FINISHED
    )
    whens = "\n    ".join(moves)
    return [
        f"CREATE TRIGGER {UPDATE_TRIGGER} BEFORE UPDATE ON {SESSION_TABLE} "
        f"WHEN OLD.status IS NOT NEW.status OR OLD.status IN ({finished})\n"
        "BEGIN SELECT CASE\n"
        f"    {whens}\n"
        f"    WHEN OLD.status IN ({finished}) AND ({changed})\n"
        f"    THEN CASE OLD.status {no_change} END\n"
        "END; END",
        f"CREATE TRIGGER {DELETE_TRIGGER} BEFORE DELETE ON {SESSION_TABLE} "
        f"WHEN {SQLITE_NOT_PURGING} "
        "BEGIN SELECT RAISE(ABORT, 'sessions are removed only by the retention "
        "command (manage.py purge_sessions)'); END",
    ]


def _drop_statements():
    return [
        f"DROP TRIGGER IF EXISTS {UPDATE_TRIGGER}",
        f"DROP TRIGGER IF EXISTS {DELETE_TRIGGER}",
        *(sql for table in AUDIT_TABLES for sql in sqlite_drop_refuse_changes_sql(table)),
    ]


def install(apps, schema_editor):
    """(Re)create every trigger (SQLite only): idempotent."""
    if schema_editor.connection.vendor != "sqlite":
        return
    session = apps.get_model("sessions_app", "AgentSession")
    columns = [field.column for field in session._meta.concrete_fields]
    statements = [
        *_drop_statements(),
        *(sql for table in AUDIT_TABLES for sql in sqlite_refuse_changes_sql(table)),
        *session_trigger_sql(columns),
    ]
    with schema_editor.connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        for statement in _drop_statements():
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_provider_call_commentary"),
        # the purge flag table the triggers read
        ("tooling", "0012_sqlite_append_only"),
    ]

    operations = [
        migrations.RunPython(install, uninstall),
    ]
