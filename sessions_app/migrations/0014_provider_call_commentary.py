"""Issue #24: a provider call keeps the model's commentary messages (phase
``commentary``) apart from its answer; a citation's ``search_call_id`` now
links file and container-file citations to their call too (help text only)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_dispatch_failures"),
    ]

    operations = [
        migrations.AddField(
            model_name="providercall",
            name="commentary",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="The text of each message the model marked as "
                "commentary (phase 'commentary'), in order: on the record, not "
                "part of the output.",
            ),
        ),
        migrations.AlterField(
            model_name="citation",
            name="search_call_id",
            field=models.CharField(
                blank=True,
                help_text="The native call this citation most likely came from: "
                "the web_search_call of a URL, the file_search_call of a file, "
                "the code_interpreter_call of a container file.",
                max_length=100,
            ),
        ),
    ]
