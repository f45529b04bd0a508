"""A refused request is one line in the log, not a traceback.

Django's request logger writes every 4xx it answers from an exception (a
403 from ``PermissionDenied``, a 404 from ``Http404`` in DEBUG's absence, a
400 from a bad request) with the exception's traceback: an approver who may
not decide a request, or a user opening another's session, filled the web
log with stack frames that say nothing an operator can act on. The line
(method, path, status) stays; a 5xx keeps its traceback.
"""

from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    """Drops the traceback of a record about a response below 500; lets
    every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500 and record.exc_info:
            record.exc_info = None
            record.exc_text = None
        return True
