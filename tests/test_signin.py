"""Failed sign-ins are limited (wink_project/signin.py), at the login page and
the admin's: per username and per client address, counted in the cache every
process shares (a table of the database by default), refused without checking
the password, the same whether the account exists or not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.signals import user_login_failed
from django.db import connection
from django.test import Client

from tests.sessions_app.factories import UserFactory
from wink_project.signin import REFUSED

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[1]
LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
PASSWORD = "correct horse battery staple"
REFUSAL = "Too many failed sign-in attempts; try again in 15 minutes."
INVALID = "Please enter a correct username and password. Note that both fields"


@pytest.fixture(autouse=True)
def _rates(settings):
    settings.WINK_LOGIN_RATE = (5, 900)
    settings.WINK_LOGIN_IP_RATE = (50, 900)


@pytest.fixture
def account():
    user = UserFactory.create(username="ada")
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def checked_passwords():
    """Each password check that failed (Django's signal): refused attempts
    never reach it."""
    failed: list[str] = []

    def count(sender, credentials, **kwargs):
        failed.append(credentials["username"])

    user_login_failed.connect(count)
    yield failed
    user_login_failed.disconnect(count)


def attempt(client: Client, username: str, password: str, *, url: str = LOGIN):
    return client.post(url, {"username": username, "password": password})


def message(response) -> str:
    """The form's error, as the page shows it."""
    errors = response.context["form"].non_field_errors()
    return " ".join(errors)


def age_out() -> None:
    """What the window's end does: every counted attempt expires."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE wink_cache SET expires = %s",
            [connection.ops.adapt_datetimefield_value(_past())],
        )


def _past():
    from datetime import UTC, datetime

    return datetime(2000, 1, 1, tzinfo=UTC)


def test_signin_refuses_wrong_passwords_after_the_limit_without_checking(
    client, account, checked_passwords
):
    responses = [attempt(client, "ada", f"guess-{n}") for n in range(60)]
    assert [r.status_code for r in responses[:5]] == [200] * 5
    assert all(message(r).startswith(INVALID) for r in responses[:5])
    assert [r.status_code for r in responses[5:]] == [429] * 55
    assert all(message(r) == REFUSAL for r in responses[5:])
    assert 800 < int(responses[-1]["Retry-After"]) <= 900  # the oldest failure's
    assert REFUSAL in responses[-1].content.decode()
    # only the first five passwords were checked
    assert checked_passwords == ["ada"] * 5


def test_signin_right_password_after_a_lockout_waits_for_the_window(client, account):
    for n in range(5):
        attempt(client, "ada", f"guess-{n}")
    response = attempt(client, "ada", PASSWORD)
    assert response.status_code == 429
    assert message(response) == REFUSAL
    assert "_auth_user_id" not in client.session
    age_out()
    response = attempt(client, "ada", PASSWORD)
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(account.pk)


def test_signin_refusal_does_not_tell_whether_the_account_exists(client, account):
    def statuses_and_messages(username: str) -> list[tuple[int, str]]:
        return [
            (r.status_code, message(r))
            for r in (attempt(client, username, f"guess-{n}") for n in range(7))
        ]

    existing = statuses_and_messages("ada")
    missing = statuses_and_messages("nobody-here")
    assert existing == missing
    assert [status for status, _ in existing] == [200] * 5 + [429] * 2


def test_signin_counts_a_username_whatever_its_case(client, account):
    for name in ("ada", "ADA", "Ada", "aDa", "adA"):
        assert attempt(client, name, "wrong").status_code == 200
    assert attempt(client, "ada", PASSWORD).status_code == 429


def test_signin_success_forgets_the_usernames_failures(client, account):
    for n in range(4):
        attempt(client, "ada", f"guess-{n}")
    assert attempt(client, "ada", PASSWORD).status_code == 302
    client.logout()
    statuses = [attempt(client, "ada", f"again-{n}").status_code for n in range(6)]
    assert statuses == [200] * 5 + [429]


def test_signin_limits_each_client_address(settings, account):
    settings.WINK_LOGIN_IP_RATE = (3, 900)
    spraying = Client(REMOTE_ADDR="203.0.113.7")
    statuses = [
        attempt(spraying, f"user-{n}", "password1").status_code for n in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    # another address signs in as usual
    elsewhere = Client(REMOTE_ADDR="198.51.100.2")
    assert attempt(elsewhere, "ada", PASSWORD).status_code == 302


def test_signin_success_does_not_count_against_the_address(settings, account):
    settings.WINK_LOGIN_IP_RATE = (2, 900)
    client = Client()
    for _ in range(3):
        assert attempt(client, "ada", PASSWORD).status_code == 302
        client.logout()


def test_signin_limits_can_be_turned_off(client, settings, account):
    settings.WINK_LOGIN_RATE = None
    settings.WINK_LOGIN_IP_RATE = None
    assert {attempt(client, "ada", "wrong").status_code for _ in range(8)} == {200}


def test_admin_login_is_limited_too(client, account, checked_passwords):
    account.is_staff = True
    account.save()
    statuses = [
        attempt(client, "ada", f"guess-{n}", url=ADMIN_LOGIN).status_code
        for n in range(6)
    ]
    assert statuses == [200] * 5 + [429]
    response = attempt(client, "ada", PASSWORD, url=ADMIN_LOGIN)
    assert response.status_code == 429
    assert REFUSAL in response.content.decode()
    assert len(checked_passwords) == 5


def test_admin_login_counts_a_non_staff_accounts_right_password(client, account):
    # else the limit would tell a right password from a wrong one
    statuses = {
        attempt(client, "ada", PASSWORD, url=ADMIN_LOGIN).status_code for _ in range(5)
    }
    assert statuses == {200}
    assert attempt(client, "ada", PASSWORD, url=ADMIN_LOGIN).status_code == 429


def test_signin_counts_in_the_database_cache_table(client, account):
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM wink_cache")
        assert cursor.fetchone() == (0,)
    attempt(client, "ada", "wrong")
    with connection.cursor() as cursor:
        cursor.execute("SELECT cache_key FROM wink_cache")
        keys = sorted(key for (key,) in cursor.fetchall())
    # one slot of the username, one of the address; the username as a digest
    assert len(keys) == 2
    assert all("wink:signin:" in key for key in keys)
    assert not any("ada" in key for key in keys)


def test_signin_message_counts_the_minutes_left():
    from wink_project.signin import _minutes

    assert REFUSED.format(wait=_minutes(30)) == (
        "Too many failed sign-in attempts; try again in 1 minute."
    )
    assert _minutes(61) == "2 minutes"
    assert _minutes(900) == "15 minutes"


# -- across processes --------------------------------------------------------------

_ATTEMPTS = """
import sys

import django

django.setup()
from django.test import Client

client = Client()
print(
    [
        client.post(
            "/accounts/login/", {"username": "ada", "password": "wrong"}
        ).status_code
        for _ in range(int(sys.argv[1]))
    ]
)
"""


def _run(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def _redis_cache_url() -> str | None:
    url = "redis://127.0.0.1:6379/12"
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception:
        return None
    return url


@pytest.mark.parametrize("cache", ["database", "redis"])
def test_signin_count_is_shared_by_processes(migrated_sqlite, cache):
    # a database set up by `migrate` alone (its cache table included)
    env = {
        **{k: v for k, v in os.environ.items() if k != "WINK_CACHE_URL"},
        "DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "wink_project.settings",
        "DATABASE_URL": migrated_sqlite(),
        "WINK_LOGIN_RATE": "3/15m",
    }
    if cache == "redis":
        url = _redis_cache_url()
        if url is None:
            pytest.skip("no Redis at 127.0.0.1:6379 (database 12)")
        env["WINK_CACHE_URL"] = url
        _run(
            env,
            "-c",
            "import django; django.setup(); "
            "from django.core.cache import cache; cache.clear()",
        )
    first = _run(env, "-c", _ATTEMPTS, "3")
    second = _run(env, "-c", _ATTEMPTS, "1")
    assert first == "[200, 200, 200]"
    assert second == "[429]"  # another process, the same count
