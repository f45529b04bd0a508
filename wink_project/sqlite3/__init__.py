"""Django's SQLite backend, with a flush the append-only triggers let through
(``base.py``). ``settings/core.py`` selects it for every SQLite database."""
