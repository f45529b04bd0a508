"""Settings come from the environment and fail clearly at startup."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.limits import SUBPROCESS_SECONDS

ROOT = Path(__file__).resolve().parents[1]


def _check(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DEBUG",
            "SECRET_KEY",
            "WINK_PROVIDER",
            "OPENAI_API_KEY",
            "DATABASE_URL",
        }
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )


def test_settings_require_a_secret_key_when_debug_is_off():
    result = _check(DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_settings_reject_an_unknown_provider():
    result = _check(DEBUG="1", WINK_PROVIDER="anthropic")
    assert "WINK_PROVIDER must be 'openai' or 'offline'" in result.stderr


def test_settings_openai_provider_needs_a_key():
    result = _check(DEBUG="1", WINK_PROVIDER="openai")
    assert "WINK_PROVIDER=openai needs OPENAI_API_KEY" in result.stderr


def test_settings_reject_a_malformed_boolean():
    result = _check(DEBUG="maybe")
    assert "DEBUG must be a boolean" in result.stderr


def test_settings_start_with_a_secret_key_and_debug_off():
    result = _check(DEBUG="0", SECRET_KEY="x" * 50, ALLOWED_HOSTS="example.com")
    assert result.returncode == 0, result.stderr


def _provider(**env: str) -> str:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"WINK_PROVIDER", "OPENAI_API_KEY"}
    }
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings; print(settings.WINK_PROVIDER)",
        ],
        cwd=ROOT,
        env={**clean, "DEBUG": "1", **env},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()[-1]  # after the shell's own import notice


def test_settings_default_provider_is_offline_without_a_key():
    assert _provider() == "offline"


def test_settings_default_provider_is_openai_with_a_key():
    assert _provider(OPENAI_API_KEY="sk-test") == "openai"
    assert _provider(OPENAI_API_KEY="sk-test", WINK_PROVIDER="offline") == "offline"


@pytest.mark.django_db
def test_models_and_migrations_are_in_sync():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("5/15m", (5, 900)),
        ("30/minute", (30, 60)),
        ("100/2h", (100, 7200)),
        ("10/d", (10, 86400)),
        (" 3/90S ", (3, 90)),
        ("off", None),
        ("", (5, 900)),  # the default
    ],
)
def test_settings_login_rates_parse(raw, expected):
    from unittest import mock

    from wink_project.env import env_rate

    with mock.patch.dict(os.environ, {"WINK_LOGIN_RATE": raw}):
        assert env_rate("WINK_LOGIN_RATE", "5/15m") == expected


@pytest.mark.parametrize("raw", ["five", "0/15m", "5/0m", "5/15", "5/15y", "2000/h"])
def test_settings_login_rates_refuse_what_is_not_a_rate(raw):
    from unittest import mock

    from django.core.exceptions import ImproperlyConfigured

    from wink_project.env import env_rate

    with (
        mock.patch.dict(os.environ, {"WINK_LOGIN_RATE": raw}),
        pytest.raises(ImproperlyConfigured, match="WINK_LOGIN_RATE must look like"),
    ):
        env_rate("WINK_LOGIN_RATE", "5/15m")


def test_the_sdks_http_clients_log_no_line_per_request():
    """The openai SDK's HTTP client (httpx2) logs every request at INFO: a
    line per provider call in a worker's log unless the settings quiet it."""
    import logging

    for name in ("httpx", "httpx2", "openai"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ""),  # off by default
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "http://c:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/traces",
            },
            "https://t.example/traces",
        ),
    ],
)
def test_settings_otlp_traces_endpoint(env, expected):
    from unittest import mock

    from wink_project.env import env_otlp_traces_endpoint

    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP_")
    }
    with mock.patch.dict(os.environ, {**clean, **env}, clear=True):
        assert env_otlp_traces_endpoint() == expected


def test_settings_refuse_an_otlp_endpoint_that_is_not_a_url():
    result = _check(DEBUG="1", OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318")
    assert result.returncode != 0
    assert "OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL" in result.stderr


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:notaport/v1", "its port is not a number"),
        ("https://user:s3cret@proxy.example:99999/v1", "its port is not a number"),
        ("ftp://proxy.example/v1", "does not start with http:// or https://"),
        ("http:///v1", "names no host"),
        ("http://[::1:8001/v1", "cannot be read as a URL"),
        ("http://my host:8001/v1", "its host holds a space"),
    ],
)
def test_settings_refuse_a_provider_url_a_client_cannot_use(url, reason):
    """At start, with the reason, not as each run's "unexpected error"; the
    value is not repeated (it may hold a credential)."""
    result = _check(DEBUG="1", OPENAI_BASE_URL=url)
    assert result.returncode != 0
    assert "OPENAI_BASE_URL must be an http(s) URL" in result.stderr
    assert reason in result.stderr
    assert "s3cret" not in result.stderr


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8001/v1",
        "http://[::1]:8001/v1",
        "HTTPS://proxy.example/my path/v1?q=a b",
        "   ",  # blank: unset
    ],
)
def test_settings_take_a_provider_url_a_client_can_use(url):
    result = _check(DEBUG="1", OPENAI_BASE_URL=url)
    assert result.returncode == 0, result.stderr
