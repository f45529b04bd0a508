import os

import pytest

OPENAI_SKIP_REASON = "OPENAI_API_KEY is not set: live OpenAI tests skipped"


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``openai`` (they talk to the real API) without a key."""
    if os.environ.get("OPENAI_API_KEY"):
        return
    skip = pytest.mark.skip(reason=OPENAI_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("openai") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _offline_provider(request):
    """Runs go to the offline provider even where OPENAI_API_KEY is set (the
    settings would then default to "openai"); the live tests marked ``openai``
    choose their provider themselves."""
    if request.node.get_closest_marker("openai") is not None:
        return
    if not request.config.pluginmanager.hasplugin("django"):
        return  # runtime tests run without Django (-p no:django)
    settings = request.getfixturevalue("settings")
    settings.WINK_PROVIDER = "offline"
    # Throttles count in the cache (a database table, or Redis): each test
    # that may reach the database starts with none.
    if _uses_database(request):
        from django.core.cache import cache

        cache.clear()
    # Test users need no slow key derivation.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _uses_database(request) -> bool:
    """Whether the test has the database: marked ``django_db`` (set up by an
    earlier autouse fixture) or asking for it through a fixture (set up here,
    as it would be a moment later)."""
    if request.node.get_closest_marker("django_db") is not None:
        return True
    for name, database in (
        ("live_server", "transactional_db"),
        ("transactional_db", "transactional_db"),
        ("db", "db"),
    ):
        if name in request.fixturenames:
            request.getfixturevalue(database)
            return True
    return False


@pytest.fixture
def user(db):
    """An operator: sees every session and may start runs (what most tests
    need; the access tests use users with fewer permissions)."""
    from django.contrib.auth.models import Permission

    from tests.sessions_app.factories import UserFactory

    operator = UserFactory.create()
    operator.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="sessions_app",
            codename__in=["view_all_sessions", "start_session"],
        )
    )
    return operator


@pytest.fixture
def api_client(user):
    # Imported here so runtime tests can run without Django (-p no:django).
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user=user)
    return client


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory):
    """A function giving the URL of a new SQLite file database, migrated as
    ``make run`` migrates one (``migrate`` alone), for tests that run other
    processes or threads against one database (the test database is in
    memory, and its threads lock each other's tables)."""
    import contextlib
    import shutil
    import sqlite3
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    template = tmp_path_factory.mktemp("migrated") / "db.sqlite3"
    env = {
        **{k: v for k, v in os.environ.items() if k not in _PROCESS_ENV},
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{template}",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # everything in the file itself (write-ahead logging: a log may remain)
    with contextlib.closing(sqlite3.connect(template)) as database:
        database.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def copy() -> str:
        path = tmp_path_factory.mktemp("database") / "db.sqlite3"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"

    return copy


# What a test's own processes must not inherit from the shell running the tests.
_PROCESS_ENV = {
    "DATABASE_URL",
    "WINK_CACHE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "DJANGO_SETTINGS_MODULE",
}
