"""SQL of our own goes through a few named doors only (issue #25).

Every ``.py`` file under ``sessions_app/`` and ``tooling/`` (migrations
excluded: they are schema operations by nature) is parsed with ``ast`` and
checked for what bypasses the ORM:

- ``cursor``: a database cursor opened (``connection.cursor()``,
  ``connections[alias].cursor()``, ``schema_editor.connection.cursor()``:
  any ``.cursor()`` / ``.chunked_cursor()`` call);
- ``execute``: statement text sent on a cursor (``.execute()`` /
  ``.executemany()`` on a name bound to a cursor, or on ``....cursor()``);
- ``models.sql``: Django's query internals imported (``django.db.models.sql``
  and its modules, ``from django.db.models import sql``, ``models.sql``);
- ``RawSQL``, ``raw``, ``extra``: statement text given to the ORM
  (``RawSQL(...)``, ``Manager.raw(...)``, ``QuerySet.extra(...)``).

Only the doors in ``DOORS`` may, each for the reason given there, and each
exactly for what it is allowed (a door that no longer needs a permission must
lose it here). The run's writes have one door, ``runs/store/commits.py``.
Outside the checked packages: ``wink_project/sqlite3/`` (the SQLite backend
itself), the migrations, and the tests.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED_PACKAGES = ("sessions_app", "tooling")

#: path -> (what it may do, why)
DOORS: dict[str, tuple[frozenset[str], str]] = {
    # The run store's one statement Django has no form for: a transaction
    # that commits durably (``SET LOCAL synchronous_commit TO on``) on a
    # worker connection whose commits do not wait (commits.durable()).
    "sessions_app/runs/store/commits.py": (
        frozenset({"cursor", "execute"}),
        "the run's durable pause and end",
    ),
    # The audit tables' append-only triggers: the migration operations that
    # create and drop them (CREATE/DROP TRIGGER, per vendor), and purging()'s
    # pass for a purge's deletes, local to its transaction (SET LOCAL
    # wink.purge on PostgreSQL, the flag row on SQLite).
    "tooling/append_only.py": (
        frozenset({"cursor", "execute"}),
        "append-only triggers and the purge pass",
    ),
    # The section tree's edits: the advisory lock that serialises them
    # (pg_advisory_xact_lock) and would_cycle()'s walk up the tree (a
    # recursive CTE: Django has no form for WITH RECURSIVE).
    "tooling/models/catalog.py": (
        frozenset({"cursor", "execute"}),
        "the section tree's lock and cycle check",
    ),
    # The catalog's reads of the section tree: the sections under the roots
    # (Manager.raw over a recursive CTE, whole rows) and the ids above some
    # (a recursive CTE on a cursor).
    "tooling/assembly/catalog.py": (
        frozenset({"cursor", "execute", "raw"}),
        "the section tree's recursive reads",
    ),
    # A list that sorts its few matches (a text search that chose the
    # trigram index, a rare citation domain) is read in a transaction with
    # sequential scans off (SET LOCAL enable_seqscan): PostgreSQL prices
    # LIKE on a long text as one operator and would read every text instead
    # (plans.search_index_plan, ADR 0028's addenda; a rare domain is read
    # the same way, one rule for every sorted read).
    "sessions_app/audit/plans.py": (
        frozenset({"cursor", "execute"}),
        "a search's index plan",
    ),
    # The prompts an edit touches: a UNION of small selects (built by
    # catalog.sql_names) as ``pk__in``, one query instead of one per link.
    "tooling/assembly/edits.py": (
        frozenset({"RawSQL"}),
        "the prompts an edit touches",
    ),
}

CURSOR_METHODS = frozenset({"cursor", "chunked_cursor"})
EXECUTE_METHODS = frozenset({"execute", "executemany"})
QUERY_INTERNALS = "django.db.models.sql"


def _is_cursor_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CURSOR_METHODS
    )


def _cursor_names(tree: ast.AST) -> set[str]:
    """Names bound to a cursor: ``with x.cursor() as name``, ``name =
    x.cursor()``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if _is_cursor_call(item.context_expr) and isinstance(
                    item.optional_vars, ast.Name
                ):
                    names.add(item.optional_vars.id)
        elif isinstance(node, ast.Assign) and _is_cursor_call(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _internals(module: str) -> bool:
    return module == QUERY_INTERNALS or module.startswith(QUERY_INTERNALS + ".")


def doors_used(source: str, filename: str = "<source>") -> list[str]:
    """``"<line>: <what>"`` for every way ``source`` bypasses the ORM."""
    tree = ast.parse(source, filename=filename)
    cursors = _cursor_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, "models.sql") for a in node.names if _internals(a.name)
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _internals(node.module) or (
                node.module == "django.db.models"
                and any(alias.name == "sql" for alias in node.names)
            ):
                found.append((node.lineno, "models.sql"))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "sql"
            and isinstance(node.value, ast.Name)
            and node.value.id == "models"
        ):
            found.append((node.lineno, "models.sql"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else None
            )
            if _is_cursor_call(node):
                found.append((node.lineno, "cursor"))
            elif isinstance(func, ast.Attribute) and func.attr in EXECUTE_METHODS:
                on = func.value
                if (isinstance(on, ast.Name) and on.id in cursors) or _is_cursor_call(
                    on
                ):
                    found.append((node.lineno, "execute"))
            elif name == "RawSQL":
                found.append((node.lineno, "RawSQL"))
            elif isinstance(func, ast.Attribute) and func.attr in ("raw", "extra"):
                found.append((node.lineno, func.attr))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _python_files() -> list[Path]:
    files: list[Path] = []
    for package in CHECKED_PACKAGES:
        files.extend(
            path
            for path in sorted((ROOT / package).rglob("*.py"))
            if "migrations" not in path.relative_to(ROOT).parts
        )
    return files


@functools.cache
def _used() -> dict[str, frozenset[str]]:
    """What each checked module does of the above (modules that do nothing
    left out), by path."""
    used: dict[str, frozenset[str]] = {}
    for path in _python_files():
        found = doors_used(path.read_text(encoding="utf-8"), str(path))
        if found:
            used[path.relative_to(ROOT).as_posix()] = frozenset(
                entry.split(": ", 1)[1] for entry in found
            )
    return used


def test_the_scanner_flags_every_form() -> None:
    source = "\n".join(
        [
            "from django.db import connection, connections, models",  # 1
            "with connection.cursor() as cursor:",  # 2
            "    cursor.execute('SELECT 1')",  # 3
            "c = connections['default'].cursor()",  # 4
            "c.executemany('INSERT', [])",  # 5
            "schema_editor.connection.cursor().execute('DROP')",  # 6
            "import django.db.models.sql.compiler",  # 7
            "from django.db.models.sql import Query",  # 8
            "from django.db.models import sql",  # 9
            "q = models.sql.Query(None)",  # 10
            "Session.objects.raw('SELECT *')",  # 11
            "Session.objects.extra(where=['1'])",  # 12
            "RawSQL('SELECT 1', [])",  # 13
            "expressions.RawSQL('SELECT 1', [])",  # 14
            "executor.execute(call)",  # 15: not a cursor
            "from django.db.models import sqlish, F",  # 16
            "connection.chunked_cursor()",  # 17
        ]
    )
    assert doors_used(source) == [
        "2: cursor",
        "3: execute",
        "4: cursor",
        "5: execute",
        "6: cursor",
        "6: execute",
        "7: models.sql",
        "8: models.sql",
        "9: models.sql",
        "10: models.sql",
        "11: raw",
        "12: extra",
        "13: RawSQL",
        "14: RawSQL",
        "17: cursor",
    ]


def test_the_checked_files_include_the_store_and_exclude_migrations() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in _python_files()}
    assert "sessions_app/runs/store/store.py" in names
    assert "sessions_app/runs/store/commits.py" in names
    assert "tooling/runtime/execution/executor.py" in names
    assert not [name for name in names if "/migrations/" in name]
    assert set(DOORS) <= names, "a door that does not exist any more"


def test_only_the_doors_bypass_the_orm() -> None:
    used = _used()
    outside = {path: sorted(what) for path, what in used.items() if path not in DOORS}
    assert outside == {}, (
        "SQL of its own outside the doors (use the ORM, or go through a door "
        "and add it to DOORS with its reason)"
    )


@pytest.mark.parametrize("path", sorted(DOORS))
def test_each_door_does_exactly_what_it_is_allowed(path: str) -> None:
    allowed, _reason = DOORS[path]
    assert _used().get(path, frozenset()) == allowed
