"""Secrets never reach the log: a filter on the project's log handler masks
every configured secret (``secret_values``) in each record's message, its
traceback and its stack, whichever library wrote it.

A library logs what it was given: OpenTelemetry's exporter writes the URL it
failed to reach, query string and all; a database driver may write its
connection string. Masking at the handler covers them all.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from wink_project.secret_values import Masker, configured_secrets

SUBSTITUTE = "********"


@functools.cache
def _masker() -> Masker:
    return Masker(configured_secrets(), SUBSTITUTE)


@receiver(setting_changed)
def _forget_masker(**kwargs: Any) -> None:
    _masker.cache_clear()


class SecretMaskingFilter(logging.Filter):
    """Rewrites a record with its secrets masked; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        # a record that cannot be formatted (``log("%d", "x")``) goes on as
        # it is: the handler reports it, as it would without this filter
        with contextlib.suppress(Exception):
            self._mask(record)
        return True

    def _mask(self, record: logging.LogRecord) -> None:
        masker = _masker()
        message = record.getMessage()
        masked = masker.text(message)
        if masked is not message:
            record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            # what the formatter would write, masked first (it keeps exc_text)
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = masker.text(record.exc_text)
        if record.stack_info:
            record.stack_info = masker.text(record.stack_info)
