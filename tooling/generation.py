"""The catalog's generation: a token that changes with every catalog write.

Database triggers on every catalog table replace the one row of
``CatalogGeneration`` with a new random token in the same transaction as the
write (PostgreSQL: once per statement; SQLite: once per row). So a reader that
reads the token *before* the catalog rows (``PromptTemplateQuerySet.
with_generation``, the template's own query) knows that those rows are at
least as new as the token: a frozen revision cached under a template and a
token (``assembly.catalog.freeze_template``) is never older than the catalog
that token names. The token is random, not a counter, so a rolled-back write
(a test's transaction) can never give two different catalogs the same token.

Writes through the ORM, ``QuerySet.update()``, raw SQL, the admin and
fixtures all fire the triggers; a ``TRUNCATE`` (``flush``) empties the row
itself, which turns the cache off (no token) until a migration puts it back.

A new catalog table gets its triggers in its own migration
(``install_triggers``). On SQLite, a migration that rebuilds a catalog table
(adding a column with a default does) drops its triggers: it must put them
back (tooling/migrations/0010_issue13_schema.py does).
"""

from __future__ import annotations

# Every catalog table (tooling's models and their many-to-many tables, except
# the revisions themselves, this row and the users' budgets): what frozen
# revisions and price sheets read. A test checks the list against the models
# (tests/tooling/test_generation.py).
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
    "tooling_modelprice",
    "tooling_hostedtoolprice",
)

GENERATION_TABLE = "tooling_cataloggeneration"

BUMP_FUNCTION = f"""
CREATE OR REPLACE FUNCTION wink_bump_catalog_generation() RETURNS trigger AS $$
BEGIN
    UPDATE {GENERATION_TABLE}
    SET token = md5(random()::text || clock_timestamp()::text) WHERE id = 1;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""

DROP_BUMP_FUNCTION = "DROP FUNCTION IF EXISTS wink_bump_catalog_generation();"

SQLITE_BUMP = (
    f"UPDATE {GENERATION_TABLE} SET token = lower(hex(randomblob(16))) WHERE id = 1;"
)


def postgresql_triggers(table: str) -> list[str]:
    return [
        f"CREATE TRIGGER {table}_generation AFTER INSERT OR UPDATE OR DELETE "
        f"OR TRUNCATE ON {table} FOR EACH STATEMENT "
        "EXECUTE FUNCTION wink_bump_catalog_generation();"
    ]


def sqlite_triggers(table: str) -> list[str]:
    return [
        f"CREATE TRIGGER {table}_generation_{event.lower()} AFTER {event} ON {table} "
        f"BEGIN {SQLITE_BUMP} END;"
        for event in ("INSERT", "UPDATE", "DELETE")
    ]


def install_triggers(vendor: str, tables: tuple[str, ...]) -> list[str]:
    """The statements that add the generation triggers to ``tables``."""
    if vendor == "postgresql":
        return [sql for table in tables for sql in postgresql_triggers(table)]
    if vendor == "sqlite":
        return [sql for table in tables for sql in sqlite_triggers(table)]
    return []


def drop_triggers(vendor: str, table: str) -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {table}_generation ON {table};"]
    return [
        f"DROP TRIGGER IF EXISTS {table}_generation_{event}"
        for event in ("insert", "update", "delete")
    ]
