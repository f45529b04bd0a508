"""A session records why its run could not be sent to a worker (issue #24):
the broker was unreachable when it was started (or re-dispatched); the start
still answers with the queued session and the sweeper sends it again."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0012_approvals_per_policy"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="dispatch_error",
            field=models.CharField(
                blank=True,
                help_text="Why the last send to a worker failed (empty once it was "
                "sent).",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="dispatch_failed_at",
            field=models.DateTimeField(
                blank=True, help_text="When a send to a worker last failed.", null=True
            ),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="dispatch_failures",
            field=models.PositiveIntegerField(
                default=0,
                help_text="How many sends to a worker failed (broker unreachable).",
            ),
        ),
    ]
