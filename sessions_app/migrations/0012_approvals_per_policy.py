"""Approvals per policy, four eyes, and the cancelled status (issue #24).

- A call two approval policies ask about gets a request under each, in turn:
  the uniqueness is (session, call id, policy) instead of (session, call id).
- ``four_eyes``: the rule in effect when the request was made (its policy's
  ``four_eyes``, else ``WINK_APPROVAL_FOUR_EYES``); existing rows keep
  ``False``, as they were decided without it.
- ``cancelled``: the request of a run cancelled while it waited. Rows that the
  earlier code marked ``expired`` for that reason (no decider, the reason it
  wrote) become ``cancelled``, so the inbox says what happened.
"""

from django.conf import settings
from django.db import migrations, models

CANCEL_REASON = "The session was cancelled."


def mark_cancelled(apps, schema_editor):
    ApprovalRequest = apps.get_model("sessions_app", "ApprovalRequest")
    ApprovalRequest.objects.filter(
        status="expired",
        decided_by__isnull=True,
        decision_reason__startswith=CANCEL_REASON,
        session__status="cancelled",
    ).update(status="cancelled")


def mark_expired(apps, schema_editor):
    ApprovalRequest = apps.get_model("sessions_app", "ApprovalRequest")
    ApprovalRequest.objects.filter(status="cancelled").update(status="expired")


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_session_transitions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="approvalrequest",
            name="unique_approval_call",
        ),
        migrations.AddField(
            model_name="approvalrequest",
            name="four_eyes",
            field=models.BooleanField(
                default=False,
                help_text="The run's author may not decide it (the policy's "
                "four_eyes, else WINK_APPROVAL_FOUR_EYES, when it was requested).",
            ),
        ),
        migrations.AlterField(
            model_name="approvalrequest",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("approved", "Approved"),
                    ("denied", "Denied"),
                    ("expired", "Expired (denied automatically)"),
                    ("cancelled", "Cancelled (the run was cancelled)"),
                ],
                default="pending",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="approvalrequest",
            constraint=models.UniqueConstraint(
                condition=models.Q(("call_id__isnull", False)),
                fields=("session", "call_id", "policy_name"),
                name="unique_approval_call_policy",
            ),
        ),
        migrations.RunPython(mark_cancelled, mark_expired),
    ]
