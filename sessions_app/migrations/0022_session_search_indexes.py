"""Indexes for finding sessions (issue #28): text search, duration and cost.

On PostgreSQL the text search reads trigram indexes (``pg_trgm``, created
here if missing and kept when reversed: a trusted extension, which the
database's owner may create) of
``UPPER()`` of the texts it searches: a session's parameters and output
(``session_search_text``) and a tool call's arguments (``tool_search_text``),
the very expressions the filter's ``icontains`` compares. The duration
filters read an index of ``finished_at - started_at``; the cost and the
duration keep finer statistics (1,000 buckets), so PostgreSQL sees how rare
a high one is. SQLite has neither
trigram nor ``gin`` indexes: there the extension and these indexes are not
created, and the filters test the rows. The cost filters read ``session_cost``
on both.
"""

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import migrations, models
from django.db.models.functions import Upper

from sessions_app.models import (
    session_duration,
    session_search_text,
    tool_search_text,
)


def postgresql_indexes():
    """(model name, index) of the PostgreSQL-only indexes."""
    return [
        (
            "agentsession",
            GinIndex(
                OpClass(Upper(session_search_text()), name="gin_trgm_ops"),
                name="session_search_trgm",
            ),
        ),
        ("agentsession", models.Index(session_duration(), name="session_duration")),
        (
            "toolinvocation",
            GinIndex(
                OpClass(Upper(tool_search_text()), name="gin_trgm_ops"),
                name="tool_search_trgm",
            ),
        ),
    ]


# Finer statistics for the range filters: with the default (100 buckets) a
# cost or a duration only 3 sessions of 100,000 reach was estimated at ~1,000,
# and PostgreSQL read the whole table newest first (0.2 s) instead of the index.
FINER_STATISTICS = (
    'ALTER TABLE "sessions_app_agentsession" ALTER COLUMN "cost" SET STATISTICS 1000',
    'ALTER INDEX "session_duration" ALTER COLUMN 1 SET STATISTICS 1000',
)
DEFAULT_STATISTICS = (
    'ALTER TABLE "sessions_app_agentsession" ALTER COLUMN "cost" SET STATISTICS -1',
)


def add_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    # Django's TrigramExtension would drop the extension when this migration
    # is reversed (and reads pg_extension on SQLite then): created once, kept.
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for model_name, index in postgresql_indexes():
        schema_editor.add_index(apps.get_model("sessions_app", model_name), index)
    for statement in FINER_STATISTICS:
        schema_editor.execute(statement)


def remove_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DEFAULT_STATISTICS:
        schema_editor.execute(statement)
    for model_name, index in postgresql_indexes():
        schema_editor.remove_index(apps.get_model("sessions_app", model_name), index)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0021_approval_inbox_order"),
        ("tooling", "0015_releases"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="agentsession",
            index=models.Index(fields=["cost"], name="session_cost"),
        ),
        migrations.RunPython(add_indexes, remove_indexes),
    ]
