"""SQLite's purge flag: the table that, while it holds a row, lets deletes
through the append-only triggers (``tooling.append_only``).

A purge (or a flush) writes the row and deletes it again inside its own
transaction, so it is never committed and no other connection sees it. These
statements live apart from ``append_only`` (which defines a model) because
the project's SQLite backend (``wink_project/sqlite3``) needs them, and Django
loads the backend while it loads the models.
"""

# Holds one row while a purge (or a flush) deletes, inside its transaction
# only; the triggers let deletes through while it is there.
PURGE_FLAG_TABLE = "wink_append_only_purge"

SQLITE_CREATE_PURGE_FLAG = (
    f"CREATE TABLE IF NOT EXISTS {PURGE_FLAG_TABLE} (purging integer NOT NULL)"
)
SQLITE_DROP_PURGE_FLAG = f"DROP TABLE IF EXISTS {PURGE_FLAG_TABLE}"
SQLITE_SET_PURGE_FLAG = f"INSERT INTO {PURGE_FLAG_TABLE} (purging) VALUES (1)"
SQLITE_CLEAR_PURGE_FLAG = f"DELETE FROM {PURGE_FLAG_TABLE}"
# the condition of a trigger that refuses deletes outside a purge
SQLITE_NOT_PURGING = f"NOT EXISTS (SELECT 1 FROM {PURGE_FLAG_TABLE})"
