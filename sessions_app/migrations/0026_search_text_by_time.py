"""The search texts newest first: a view (ADR 0028's second addendum).

``SearchTextByTime`` reads it. Its ``ORDER BY`` is the point: PostgreSQL keeps
a subquery with one as a subquery, so a search that reads the trigram index
sorts the matching texts before it reads any session. SQLite gets the same
view (it never reads it: its searches read newest first).
"""

import django.db.models.deletion
from django.db import migrations, models

VIEW = "sessions_app_search_text_by_time"


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0025_session_search_text"),
    ]

    operations = [
        migrations.RunSQL(
            sql=f"CREATE VIEW {VIEW} AS "
            "SELECT session_id, created_at, ended, text "
            "FROM sessions_app_sessionsearchtext "
            "ORDER BY created_at DESC",
            reverse_sql=f"DROP VIEW {VIEW}",
        ),
        migrations.CreateModel(
            name="SearchTextByTime",
            fields=[
                (
                    "session",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="search_by_time",
                        serialize=False,
                        to="sessions_app.agentsession",
                    ),
                ),
                ("created_at", models.DateTimeField()),
                ("ended", models.BooleanField()),
                ("text", models.TextField()),
            ],
            options={
                "verbose_name": "session search text (newest first)",
                "db_table": VIEW,
                "managed": False,
            },
        ),
    ]
