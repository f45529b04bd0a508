"""A session records the label it started from (issue #27, releases) and the
session it replays (replays). The columns are nullable, so SQLite adds them
without rebuilding the table; the session trigger names the table's columns,
so it is installed again to cover the new ones (0015's ``install``,
idempotent; PostgreSQL's compares whole rows)."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

sqlite_triggers = importlib.import_module("sessions_app.migrations.0015_sqlite_append_only")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0017_session_revision_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="label",
            field=models.CharField(
                blank=True,
                help_text="The label the run started from (production, staging ...); "
                "empty: the catalog as it was, or a revision named explicitly.",
                max_length=32,
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="replay_live_tools",
            field=models.BooleanField(
                blank=True,
                help_text="A replay: whether read-only tools run live (otherwise every "
                "call is answered from the source's record).",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="replay_of",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                help_text="The session this one replays (docs/replay.md).",
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="replays",
                to="sessions_app.agentsession",
            ),
        ),
        migrations.RunPython(sqlite_triggers.install, migrations.RunPython.noop),
    ]
