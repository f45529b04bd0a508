"""Text compared in any case, alike on PostgreSQL and SQLite.

Django's ``iexact`` is ``UPPER(a) = UPPER(b)`` on PostgreSQL, which folds every
letter (its ``C.UTF-8`` and ICU locales), but ``LIKE`` on SQLite, which folds
ASCII letters only: ``ÉLODIE`` did not find ``élodie`` on the default database.
``Folded`` is ``UPPER()`` on PostgreSQL and, on SQLite, Python's
``str.casefold`` (``SQLITE_FUNCTION``, which the project's SQLite backend,
``wink_project/sqlite3``, registers on every connection).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Func, TextField

SQLITE_FUNCTION = "wink_casefold"


def casefold(text: str | None) -> str | None:
    """``SQLITE_FUNCTION``: ``text`` case-folded (``NULL`` stays ``NULL``)."""
    return None if text is None else str(text).casefold()


class Folded(Func):
    """A text expression in one case, to compare with another ``Folded``."""

    function = "UPPER"
    output_field = TextField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return super().as_sql(compiler, connection, function=SQLITE_FUNCTION, **extra)
