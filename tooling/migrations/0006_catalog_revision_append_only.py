"""Catalog revisions are append-only on PostgreSQL (a trigger refuses UPDATE and
DELETE; see ``tooling.append_only``)."""

from django.db import migrations

from tooling.append_only import (
    REFUSE_CHANGES_FUNCTION,
    drop_refuse_changes_sql,
    postgresql_only,
    refuse_changes_sql,
)


class Migration(migrations.Migration):
    dependencies = [
        ("tooling", "0005_catalog_revision"),
    ]

    operations = [
        migrations.RunPython(
            postgresql_only(
                REFUSE_CHANGES_FUNCTION, refuse_changes_sql("tooling_catalogrevision")
            ),
            postgresql_only(drop_refuse_changes_sql("tooling_catalogrevision")),
        ),
    ]
