"""Secrets never reach the log, whichever library writes the line.

OpenTelemetry's exporter logs the URL it could not reach, query string and
all: a collector's API key in ``?api_key=`` went to the worker's log. The
project's log handler masks every configured secret in each record
(``wink_project/log_masking.py``)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wink_project import log_masking

ROOT = Path(__file__).resolve().parents[1]

EXPORT_ONE_SPAN = """
import django
django.setup()
from sessions_app.telemetry import provider
with provider.tracer_provider().get_tracer("t").start_as_current_span("x"):
    pass
provider.force_flush(60_000)
"""


def logged(code: str, **env: str) -> str:
    """What ``code`` writes (stdout and stderr), run by a new Python process
    with the project's settings, ``DEBUG`` on and ``env`` (this shell's own
    OTEL_, WINK_, LOG_, CELERY_ and DEBUG variables left out)."""
    own = ("OTEL_", "WINK_", "LOG_", "CELERY_", "DEBUG")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith(own)},
            "DJANGO_SETTINGS_MODULE": "wink_project.settings",
            "DEBUG": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    return log


def test_an_unreachable_collector_is_logged_without_its_credentials() -> None:
    log = logged(
        EXPORT_ONE_SPAN,
        LOG_LEVEL="INFO",
        # port 9 (discard): nothing listens, the exporter logs its failure
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://user:PASSCANARY1@127.0.0.1:9"
        "/v1/traces?api_key=KEYCANARY2&tenant=QUERYCANARY3",
        OTEL_EXPORTER_OTLP_HEADERS="x-api-key=HEADERCANARY4,x-team=blue",
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="2",
    )

    # the exporter did log the URL it failed to reach ...
    assert "/v1/traces?" in log, log
    # ... with every secret of its configuration masked
    for canary in ("PASSCANARY1", "KEYCANARY2", "QUERYCANARY3", "HEADERCANARY4"):
        assert canary not in log, log


def test_a_traceback_and_its_arguments_are_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WINK_TEST_API_KEY", "SECRETCANARY5")
    log_masking._masker.cache_clear()
    try:
        raise ValueError("connecting with SECRETCANARY5 failed")
    except ValueError:
        record = logging.getLogger("any.library").makeRecord(
            "any.library",
            logging.ERROR,
            __file__,
            1,
            "retrying with %s",
            ("SECRETCANARY5",),
            sys.exc_info(),
        )
    try:
        assert log_masking.SecretMaskingFilter().filter(record)
        line = logging.Formatter().format(record)
    finally:
        monkeypatch.delenv("WINK_TEST_API_KEY")
        log_masking._masker.cache_clear()

    assert "retrying with ********" in line
    assert "ValueError: connecting with ******** failed" in line
    assert "SECRETCANARY5" not in line


def test_the_console_handler_masks() -> None:
    handlers = logging.getLogger().handlers
    assert any(
        isinstance(each, log_masking.SecretMaskingFilter)
        for handler in handlers
        for each in handler.filters
    )


LOG_ONE_WARNING = """
import logging
import django
django.setup()
logging.getLogger("django.request").warning("Forbidden (Permission denied): /x/")
"""


def test_a_django_warning_is_written_once_with_debug_on() -> None:
    # Django's own console handler and the root's both wrote it
    log = logged(LOG_ONE_WARNING)
    assert log.count("Forbidden (Permission denied): /x/") == 1, log


CELERY_LOGGING = """
import logging
import django
django.setup()
from wink_project.celery import app
# what `celery worker` does as it starts: its handlers replace the root's
app.log.setup_logging_subsystem(loglevel="INFO")
logging.getLogger("opentelemetry.exporter").warning("failed with WORKERCANARY6")
"""


def test_a_workers_log_is_masked_too() -> None:
    # Celery replaced the root logger's handlers, the masking filter with them
    log = logged(CELERY_LOGGING, WINK_TEST_API_KEY="WORKERCANARY6")
    assert "failed with ********" in log, log
    assert "WORKERCANARY6" not in log


def test_a_record_that_cannot_be_formatted_does_not_raise_into_its_caller(
    capsys: pytest.CaptureFixture[str],
) -> None:
    handler = logging.StreamHandler()
    handler.addFilter(log_masking.SecretMaskingFilter())
    logger = logging.getLogger("tests.unformattable")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("%d items", "x")  # raised TypeError through the filter
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert "--- Logging error ---" in capsys.readouterr().err


def test_only_credential_headers_are_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "OTEL_EXPORTER_OTLP_HEADERS",
        "x-honeycomb-team=KEYKEYKEYKEY,x-honeycomb-dataset=prod,x-scope=true",
    )
    log_masking._masker.cache_clear()
    try:
        masked = log_masking._masker().text("production model, retry=true KEYKEYKEYKEY")
    finally:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_HEADERS")
        log_masking._masker.cache_clear()
    # the dataset's and the scope's values are words, not secrets
    assert masked == "production model, retry=true ********"


def test_query_values_are_masked_by_their_names_in_long_texts_too() -> None:
    # (the pattern backtracked: 64 KB of "x=1&passpass..." took 4.7 s; each
    # name=value is now read whole, then its name tested)
    masker = log_masking._masker()
    for text in ("x=1&" + "pass" * 50_000, "=?" + "token" * 40_000):
        assert masker.text(text) == text  # no name=value with a secret name
    assert masker.text("GET /x?access_token=abc&page=2") == (
        "GET /x?access_token=********&page=2"
    )


def test_a_query_carried_encoded_in_another_is_masked() -> None:
    """The login redirect of ``/audit/costs.csv?token=...`` logs
    ``?next=/audit/costs.csv%3Ftoken%3D...`` (found by a hostile review)."""
    masker = log_masking._masker()
    assert masker.text(
        "GET /accounts/login/?next=/audit/costs.csv%3Ftoken%3D5ccda3da81%2Bab"
        "%26from%3D2026-11-01"
    ) == (
        "GET /accounts/login/?next=/audit/costs.csv%3Ftoken%3D********"
        "%26from%3D2026-11-01"
    )
    plain = "GET /accounts/login/?next=/audit/costs.csv%3Ffrom%3D2026-11-01"
    assert masker.text(plain) is plain
    # a long text is read in one pass (no backtracking)
    long = "%3F" + "%3D" * 50_000
    assert masker.text(long) == long
