"""Catalog revisions are append-only on SQLite too (as 0006 made them on
PostgreSQL): triggers refuse ``UPDATE`` and ``DELETE`` of a revision, and the
purge flag table they (and the session app's triggers) read is created
(``tooling.append_only``)."""

from django.db import migrations

from tooling.append_only import (
    SQLITE_CREATE_PURGE_FLAG,
    SQLITE_DROP_PURGE_FLAG,
    sqlite_drop_refuse_changes_sql,
    sqlite_only,
    sqlite_refuse_changes_sql,
)

TABLE = "tooling_catalogrevision"


class Migration(migrations.Migration):
    dependencies = [
        ("tooling", "0011_seed_prices"),
    ]

    operations = [
        migrations.RunPython(
            sqlite_only(
                SQLITE_CREATE_PURGE_FLAG,
                *sqlite_drop_refuse_changes_sql(TABLE),
                *sqlite_refuse_changes_sql(TABLE),
            ),
            sqlite_only(*sqlite_drop_refuse_changes_sql(TABLE), SQLITE_DROP_PURGE_FLAG),
        ),
    ]
