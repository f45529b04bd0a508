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


def test_an_unreachable_collector_is_logged_without_its_credentials() -> None:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OTEL_", "WINK_", "LOG_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="wink_project.settings",
        DEBUG="1",
        LOG_LEVEL="INFO",
        # port 9 (discard): nothing listens, the exporter logs its failure
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://user:PASSCANARY1@127.0.0.1:9"
        "/v1/traces?api_key=KEYCANARY2&tenant=QUERYCANARY3",
        OTEL_EXPORTER_OTLP_HEADERS="x-api-key=HEADERCANARY4,x-team=blue",
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="2",
    )
    done = subprocess.run(
        [sys.executable, "-c", EXPORT_ONE_SPAN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    log = done.stdout + done.stderr
    assert done.returncode == 0, log
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
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("WINK_", "LOG_", "DEBUG"))
    }
    env.update(DJANGO_SETTINGS_MODULE="wink_project.settings", DEBUG="1")
    done = subprocess.run(
        [sys.executable, "-c", LOG_ONE_WARNING],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert log.count("Forbidden (Permission denied): /x/") == 1, log
