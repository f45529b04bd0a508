"""Indexes for the audit reads (issue #11, docs/benchmarks.md).

Each list filter reads its page newest first from one index: sessions by
status, prompt or user and ``created_at``; tool invocations by name or
native/local and ``created_at``. A session's timeline reads its tool calls,
policy denials and state changes page by page from ``(session, turn,
sequence)``. Single-column indexes these lead with are dropped.

On PostgreSQL the citation domain filter's subdomains are found by the
reversed domain's prefix (``reverse(domain) LIKE 'gro.elpmaxe.%'``), read from
an expression index; SQLite has no pattern operator class and tests the rows.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from tooling.append_only import postgresql_only

DOMAIN_INDEX = (
    "CREATE INDEX citation_domain_reversed ON sessions_app_citation "
    "(reverse(domain) text_pattern_ops);"
)
DROP_DOMAIN_INDEX = "DROP INDEX IF EXISTS citation_domain_reversed;"


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_event_order"),
        ("tooling", "0007_storable_json"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="agentsession",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="agent_sessions",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="agentsession",
            name="prompt_ref",
            field=models.CharField(max_length=201),
        ),
        migrations.AlterField(
            model_name="agentsession",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("succeeded", "Succeeded"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                ],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="policydenial",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="policy_denials",
                to="sessions_app.agentsession",
            ),
        ),
        migrations.AlterField(
            model_name="statechange",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="state_changes",
                to="sessions_app.agentsession",
            ),
        ),
        migrations.AlterField(
            model_name="toolinvocation",
            name="name",
            field=models.CharField(max_length=64),
        ),
        migrations.AlterField(
            model_name="toolinvocation",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tool_invocations",
                to="sessions_app.agentsession",
            ),
        ),
        migrations.AddIndex(
            model_name="agentsession",
            index=models.Index(
                fields=["status", "created_at"], name="session_status_created"
            ),
        ),
        migrations.AddIndex(
            model_name="agentsession",
            index=models.Index(
                fields=["prompt_ref", "created_at"], name="session_prompt_created"
            ),
        ),
        migrations.AddIndex(
            model_name="agentsession",
            index=models.Index(
                fields=["created_by", "created_at"], name="session_user_created"
            ),
        ),
        migrations.AddIndex(
            model_name="policydenial",
            index=models.Index(
                fields=["session", "turn", "sequence"], name="denial_timeline"
            ),
        ),
        migrations.AddIndex(
            model_name="statechange",
            index=models.Index(
                fields=["session", "turn", "sequence"], name="change_timeline"
            ),
        ),
        migrations.AddIndex(
            model_name="toolinvocation",
            index=models.Index(
                fields=["session", "turn", "sequence"], name="tool_timeline"
            ),
        ),
        migrations.AddIndex(
            model_name="toolinvocation",
            index=models.Index(fields=["name", "created_at"], name="tool_name_created"),
        ),
        migrations.AddIndex(
            model_name="toolinvocation",
            index=models.Index(
                fields=["native", "created_at"], name="tool_native_created"
            ),
        ),
        migrations.RunPython(
            postgresql_only(DOMAIN_INDEX), postgresql_only(DROP_DOMAIN_INDEX)
        ),
    ]
