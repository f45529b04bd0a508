"""The database cache's table (``settings.CACHES``: the default cache unless
``WINK_CACHE_URL`` names Redis), so ``migrate`` alone sets up a fresh
database, the test database included. Created whatever the cache setting is
now (a deployment may switch back to the database cache later), by Django's
own ``createcachetable``, which leaves an existing table as it is."""

from django.core.management import call_command
from django.db import migrations

TABLE = "wink_cache"  # settings.CACHES["default"]["LOCATION"]


def create_table(apps, schema_editor):
    call_command(
        "createcachetable", TABLE, database=schema_editor.connection.alias, verbosity=0
    )


def drop_table(apps, schema_editor):
    schema_editor.execute(
        f"DROP TABLE IF EXISTS {schema_editor.quote_name(TABLE)}"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0015_sqlite_append_only"),
    ]

    operations = [
        migrations.RunPython(create_table, drop_table),
    ]
