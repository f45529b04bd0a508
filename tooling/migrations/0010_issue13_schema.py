"""Issue 13's catalog schema: the approval and call-limit policy kinds, a
prompt's cost budget and hosted tool limits, the price list and user budgets."""

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import tooling.models.tools
import tooling.storable_json
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models

from tooling.generation import drop_triggers, install_triggers

# Every catalog table at this migration. Price edits change the catalog
# generation too (cached price sheets). On SQLite, adding a column with a
# default rebuilds the table and drops its triggers: they are all put back.
CATALOG_TABLES = (
    "tooling_tooldefinition",
    "tooling_hostedtooldefinition",
    "tooling_policydefinition",
    "tooling_sectiondefinition",
    "tooling_sectiondefinition_policies",
    "tooling_sectiontool",
    "tooling_sectionhostedtool",
    "tooling_prompttemplate",
    "tooling_prompttemplate_policies",
    "tooling_promptsection",
    "tooling_modelcapability",
)
NEW_CATALOG_TABLES = ("tooling_modelprice", "tooling_hostedtoolprice")


def add_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    tables = NEW_CATALOG_TABLES + (CATALOG_TABLES if vendor == "sqlite" else ())
    with schema_editor.connection.cursor() as cursor:
        for table in tables:
            for statement in drop_triggers(vendor, table):
                cursor.execute(statement)
        for statement in install_triggers(vendor, tables):
            cursor.execute(statement)


def remove_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for table in NEW_CATALOG_TABLES:
            for statement in drop_triggers(vendor, table):
                cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ('tooling', '0009_hosted_kind_choices'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='prompttemplate',
            name='hosted_tool_limits',
            field=tooling.storable_json.StorableJSONField(blank=True, default=dict, help_text='The most calls per run of each hosted tool, e.g. {"web_search": 2} (docs/quotas.md). A used-up tool is no longer offered.'),
        ),
        migrations.AddField(
            model_name='prompttemplate',
            name='max_cost_per_session',
            field=models.DecimalField(blank=True, decimal_places=4, help_text='The most one run may spend, in USD (docs/costs.md). Empty: no limit of its own.', max_digits=12, null=True, validators=[django.core.validators.MinValueValidator(Decimal('0'))]),
        ),
        migrations.AlterField(
            model_name='policydefinition',
            name='kind',
            field=models.CharField(choices=[('sequential_dependency', 'Sequential dependency'), ('read_before_write', 'Read before write'), ('approval', 'Approval (a human decides)'), ('call_limit', 'Call limit per run')], max_length=32),
        ),
        migrations.CreateModel(
            name='HostedToolPrice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('kind', models.CharField(choices=tooling.models.tools.hosted_kind_choices, max_length=32)),
                ('unit', models.CharField(choices=[('call', 'per call'), ('container', 'per container'), ('image', 'per image')], max_length=16)),
                ('variant', models.CharField(blank=True, help_text='Empty: the kind\'s default. Containers: memory ("1g", "4g", "16g", "64g"). Images: "<quality>:<size>", e.g. "medium:1024x1024".', max_length=64)),
                ('price', models.DecimalField(decimal_places=6, help_text='USD per unit.', max_digits=12, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('effective_from', models.DateField(help_text='The first day this price applies.')),
                ('source', models.CharField(blank=True, help_text='Where the price comes from, and when.', max_length=200)),
            ],
            options={
                'ordering': ['kind', 'variant', '-effective_from'],
                'constraints': [models.UniqueConstraint(fields=('kind', 'variant', 'effective_from'), name='hosted_price_unique_day')],
            },
        ),
        migrations.CreateModel(
            name='ModelPrice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('model', models.CharField(help_text='A model name. A session\'s model matches it exactly, or as a snapshot: "gpt-5" prices "gpt-5-2025-08-07".', max_length=100)),
                ('effective_from', models.DateField(help_text='The first day these rates apply.')),
                ('input_per_mtok', models.DecimalField(decimal_places=6, help_text='Uncached input, per million tokens.', max_digits=12, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('cached_input_per_mtok', models.DecimalField(decimal_places=6, help_text='Cached input, per million tokens.', max_digits=12, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('cache_write_per_mtok', models.DecimalField(decimal_places=6, default=Decimal('0'), help_text='Input tokens written to the prompt cache, per million (billed at this rate instead of the input rate; OpenAI: the input rate).', max_digits=12, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('output_per_mtok', models.DecimalField(decimal_places=6, help_text='Output, per million tokens.', max_digits=12, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('reasoning_per_mtok', models.DecimalField(blank=True, decimal_places=6, help_text='Reasoning tokens, per million. Empty: billed as output (they are part of it).', max_digits=12, null=True, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('source', models.CharField(blank=True, help_text='Where the rates come from, and when.', max_length=200)),
            ],
            options={
                'ordering': ['model', '-effective_from'],
                'constraints': [models.UniqueConstraint(fields=('model', 'effective_from'), name='model_price_unique_day')],
            },
        ),
        migrations.CreateModel(
            name='UserBudget',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('daily_limit', models.DecimalField(decimal_places=4, help_text="USD per day (the project's time zone). 0 refuses every run.", max_digits=12, validators=[django.core.validators.MinValueValidator(Decimal('0'))])),
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='budget', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['user'],
            },
        ),
        migrations.RunPython(add_triggers, remove_triggers),
    ]
