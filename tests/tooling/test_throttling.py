"""The shared throttles (tooling/api/throttling.py): counted in the cache every
process shares (the database's cache table by default), exact when requests
arrive together; and the cache settings (WINK_CACHE_URL)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.db import connection, connections
from rest_framework.test import APIClient

from tests.sessions_app.factories import UserFactory
from tooling.api.throttling import Slots

ROOT = Path(__file__).resolve().parents[2]


def cache_keys() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT cache_key FROM wink_cache")
        return sorted(key for (key,) in cursor.fetchall())


@pytest.mark.django_db
def test_the_default_cache_is_the_database_table():
    assert isinstance(caches["default"], DatabaseCache)
    assert cache_keys() == []


@pytest.mark.django_db
def test_slots_let_the_limit_through_then_say_how_long_to_wait():
    taken = [Slots("k", 3, 60) for _ in range(4)]
    assert [slots.take() for slots in taken] == [True, True, True, False]
    assert taken[3].wait is not None
    assert 59 <= taken[3].wait <= 60
    assert len(cache_keys()) == 3  # in the table every process reads
    taken[0].give_back()
    assert Slots("k", 3, 60).take()
    Slots("k", 3, 60).clear()
    assert cache_keys() == []


@pytest.mark.django_db
def test_run_starts_are_counted_in_the_shared_cache(settings, user):
    # what a second gunicorn worker reads: the table, not this process's memory
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"session-start": "2/minute"},
    }
    from tooling.demo import seed_demo_catalog

    seed_demo_catalog()
    client = APIClient()
    client.force_authenticate(user)
    # a refused start gives its slot back; a run started keeps it
    client.post("/api/sessions/", {"prompt": "none/such"}, format="json")
    assert cache_keys() == []
    client.post("/api/sessions/", {"prompt": "demo/release"}, format="json")
    assert cache_keys() == [f":1:throttle_session-start_{user.pk}:0"]


@pytest.mark.django_db
def test_a_rate_set_in_the_settings_holds_while_they_do_and_no_longer(user):
    """The rate is read at each request: a change of the settings reaches
    the throttle, and undoing it ends it. (DRF binds its rates when its
    module is imported; a test's 2/minute once outlived the test and threw
    429 at the next test in the process that started three runs.)"""
    from django.core.cache import cache
    from django.test import override_settings
    from rest_framework.settings import api_settings

    from tooling.demo import seed_demo_catalog

    seed_demo_catalog()
    client = APIClient()
    client.force_authenticate(user)

    def starts(count: int) -> list[int]:
        return [
            client.post(
                "/api/sessions/", {"prompt": "demo/release"}, format="json"
            ).status_code
            for _ in range(count)
        ]

    rates = {"session-start": "2/minute"}
    with override_settings(
        REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": rates}
    ):
        assert starts(3) == [201, 201, 429]
    cache.clear()
    assert starts(3) == [201, 201, 201]  # the default, 30/minute, again


@pytest.mark.django_db(transaction=True)
def test_slots_let_exactly_the_limit_through_when_requests_arrive_together():
    # each thread its own database connection, as each worker has its own
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite's shared in-memory test database locks tables between "
            "threads; test_signin.py counts across processes on a file"
        )
    UserFactory.create()  # a committed row: the threads see the same database
    barrier = threading.Barrier(12)
    results: list[bool] = []
    lock = threading.Lock()

    def take() -> None:
        try:
            barrier.wait(timeout=30)
            taken = Slots("together", 4, 60).take()
            with lock:
                results.append(taken)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=take) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(results) == [False] * 8 + [True] * 4


# -- the setting -------------------------------------------------------------------


def _caches(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "WINK_CACHE_URL"}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(settings.CACHES['default']['BACKEND'])",
        ],
        cwd=ROOT,
        env={
            **clean,
            "DEBUG": "1",
            "DJANGO_SETTINGS_MODULE": "wink_project.settings",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cache_is_the_database_unless_wink_cache_url_names_redis():
    assert _caches().stdout.strip() == "django.core.cache.backends.db.DatabaseCache"
    redis = _caches(WINK_CACHE_URL="redis://127.0.0.1:6379/12")
    assert redis.stdout.strip() == "django.core.cache.backends.redis.RedisCache"


def test_a_wink_cache_url_that_is_not_redis_stops_the_server_without_echoing_it():
    result = _caches(WINK_CACHE_URL="memcached://user:hunter2@cache:11211")
    assert result.returncode != 0
    assert "WINK_CACHE_URL must be a redis://, rediss:// or unix:// URL" in (
        result.stderr
    )
    assert "hunter2" not in result.stderr
