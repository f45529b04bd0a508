"""One search text per session (ADR 0028).

``SessionSearchText`` holds a session's parameters, output and tool calls'
arguments, case-folded, in one text (only the parameters while it is in
flight); it is written here for every session (``index_missing``: about a
minute per million tool calls) and, from now on, when a session is created
and when it ends. On PostgreSQL a trigram index of it replaces the two of
migration 0022 (a session's own text, every tool call's arguments), which the
search no longer reads: a tool call's insert no longer updates a trigram
index.
"""

import django.db.models.deletion
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import migrations, models
from django.db.models.functions import Upper

from sessions_app.models import session_search_text, tool_search_text
from sessions_app.models.search import index_missing

TEXT_INDEX = GinIndex(
    OpClass("text", name="gin_trgm_ops"), name="session_search_text_trgm"
)


def superseded():
    """(model name, index) of migration 0022's trigram indexes."""
    return [
        (
            "agentsession",
            GinIndex(
                OpClass(Upper(session_search_text()), name="gin_trgm_ops"),
                name="session_search_trgm",
            ),
        ),
        (
            "toolinvocation",
            GinIndex(
                OpClass(Upper(tool_search_text()), name="gin_trgm_ops"),
                name="tool_search_trgm",
            ),
        ),
    ]


def write_texts(apps, schema_editor):
    index_missing(batch=2000, registry=apps)
    if schema_editor.connection.vendor != "postgresql":
        return
    texts = apps.get_model("sessions_app", "SessionSearchText")
    schema_editor.add_index(texts, TEXT_INDEX)
    for model_name, index in superseded():
        schema_editor.remove_index(apps.get_model("sessions_app", model_name), index)


def restore_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for model_name, index in superseded():
        schema_editor.add_index(apps.get_model("sessions_app", model_name), index)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0024_daily_spend"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionSearchText",
            fields=[
                (
                    "session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="search_text",
                        serialize=False,
                        to="sessions_app.agentsession",
                    ),
                ),
                ("created_at", models.DateTimeField()),
                (
                    "ended",
                    models.BooleanField(
                        default=False,
                        help_text="The text holds the whole session (written when it ended); until then only its parameters, and its tool calls are read from their rows.",
                    ),
                ),
                ("text", models.TextField()),
            ],
            options={
                "verbose_name": "session search text",
                "indexes": [
                    models.Index(
                        condition=models.Q(("ended", False)),
                        fields=["session"],
                        name="search_text_in_flight",
                    )
                ],
            },
        ),
        migrations.RunPython(write_texts, restore_indexes),
    ]
