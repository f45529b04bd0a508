"""The session trigger learns the approval moves (PostgreSQL only, like 0004).

A run that pauses for a human decision moves ``running -> awaiting_approval``;
a decision (or its expiry) moves it ``awaiting_approval -> queued``, and a
cancel ``awaiting_approval -> cancelled``. Nothing else leaves
``awaiting_approval`` (no worker holds a waiting run: it cannot start running,
succeed or fail without being queued first). Every other move is as before:
forward only (``queued < running < finished``), nothing changes on a finished
session, and deletes happen only in a purge.
"""

import importlib

from django.db import migrations

from tooling.append_only import postgresql_only

# The function as 0004 wrote it: what reversing this migration restores.
PREVIOUS = importlib.import_module(
    "sessions_app.migrations.0004_append_only"
).SESSION_FUNCTION

FUNCTION = """
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
    IF NEW.status = 'awaiting_approval' AND OLD.status
       NOT IN ('running', 'awaiting_approval') THEN
        RAISE EXCEPTION 'session % cannot move from % to awaiting_approval',
            OLD.id, OLD.status;
    END IF;
    IF OLD.status = 'awaiting_approval' THEN
        IF NEW.status NOT IN ('awaiting_approval', 'queued', 'cancelled') THEN
            RAISE EXCEPTION 'session % cannot move from awaiting_approval to %',
                OLD.id, NEW.status;
        END IF;
    ELSIF NEW.status <> 'awaiting_approval'
       AND (CASE NEW.status WHEN 'queued' THEN 0 WHEN 'running' THEN 1 ELSE 2 END)
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


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0010_issue13_schema"),
    ]

    operations = [
        # the trigger calls the function by name: replacing it is enough
        migrations.RunPython(postgresql_only(FUNCTION), postgresql_only(PREVIOUS)),
    ]
