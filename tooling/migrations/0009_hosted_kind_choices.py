# The hosted tool kinds come from the runtime's registry
# (tooling.runtime.hosted.spec) through a callable: a kind added later needs no
# migration (docs/adr/0013-hosted-kind-specs.md), shell and apply_patch
# included. No data changes.

from django.db import migrations, models

import tooling.models


class Migration(migrations.Migration):
    dependencies = [
        ("tooling", "0008_catalog_generation"),
    ]

    operations = [
        migrations.AlterField(
            model_name="hostedtooldefinition",
            name="kind",
            field=models.CharField(
                choices=tooling.models.hosted_kind_choices, max_length=32
            ),
        ),
    ]
