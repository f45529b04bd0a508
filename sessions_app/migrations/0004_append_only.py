"""Pending sessions become queued; audit rows become append-only on PostgreSQL.

Triggers refuse UPDATE and DELETE on every audit table unless the transaction
set ``wink.purge`` (the retention command does); the session table refuses a
status that moves backward, any change to a finished session (other than its
user and template links becoming NULL when those are deleted), and deletes
outside a purge. SQLite relies on the ORM guards (``tooling.append_only``).
"""

from django.db import migrations

from tooling.append_only import (
    REFUSE_CHANGES_FUNCTION,
    drop_refuse_changes_sql,
    postgresql_only,
    refuse_changes_sql,
)

AUDIT_TABLES = [
    "sessions_app_providercall",
    "sessions_app_toolinvocation",
    "sessions_app_policydenial",
    "sessions_app_citation",
    "sessions_app_statechange",
    "sessions_app_sessionpurge",
]

SESSION_FUNCTION = """
CREATE OR REPLACE FUNCTION wink_session_forward_only() RETURNS trigger AS $$
DECLARE
    kept sessions_app_agentsession%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF current_setting('wink.purge', true) = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'sessions are removed only by the retention command'
            USING HINT = 'manage.py purge_sessions';
    END IF;
    IF (CASE NEW.status WHEN 'queued' THEN 0 WHEN 'running' THEN 1 ELSE 2 END)
       < (CASE OLD.status WHEN 'queued' THEN 0 WHEN 'running' THEN 1 ELSE 2 END) THEN
        RAISE EXCEPTION 'session % cannot move from % back to %',
            OLD.id, OLD.status, NEW.status;
    END IF;
    IF OLD.status IN ('succeeded', 'failed', 'cancelled') THEN
        kept := NEW;
        kept.prompt_id := OLD.prompt_id;
        kept.created_by_id := OLD.created_by_id;
        kept.cancelled_by_id := OLD.cancelled_by_id;
        IF kept IS DISTINCT FROM OLD
           OR (NEW.prompt_id IS NOT NULL AND NEW.prompt_id IS DISTINCT FROM OLD.prompt_id)
           OR (NEW.created_by_id IS NOT NULL
               AND NEW.created_by_id IS DISTINCT FROM OLD.created_by_id)
           OR (NEW.cancelled_by_id IS NOT NULL
               AND NEW.cancelled_by_id IS DISTINCT FROM OLD.cancelled_by_id) THEN
            RAISE EXCEPTION 'session % is % and can no longer change',
                OLD.id, OLD.status;
        END IF;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""

SESSION_TRIGGER = (
    "CREATE TRIGGER sessions_app_agentsession_forward_only BEFORE UPDATE OR DELETE "
    "ON sessions_app_agentsession FOR EACH ROW "
    "EXECUTE FUNCTION wink_session_forward_only();"
)


def queue_pending(apps, schema_editor):
    AgentSession = apps.get_model("sessions_app", "AgentSession")
    AgentSession.objects.filter(status="pending").update(status="queued")


def unqueue(apps, schema_editor):
    AgentSession = apps.get_model("sessions_app", "AgentSession")
    AgentSession.objects.filter(status="queued").update(status="pending")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0003_run_lifecycle"),
    ]

    operations = [
        migrations.RunPython(queue_pending, unqueue),
        migrations.RunPython(
            postgresql_only(
                REFUSE_CHANGES_FUNCTION,
                *(refuse_changes_sql(table) for table in AUDIT_TABLES),
                SESSION_FUNCTION,
                SESSION_TRIGGER,
            ),
            postgresql_only(
                "DROP TRIGGER IF EXISTS sessions_app_agentsession_forward_only "
                "ON sessions_app_agentsession;",
                "DROP FUNCTION IF EXISTS wink_session_forward_only();",
                *(drop_refuse_changes_sql(table) for table in AUDIT_TABLES),
            ),
        ),
    ]
