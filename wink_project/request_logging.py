"""A refused request is one line in the log, not a traceback.

Django's request logger writes a 4xx it answers from an exception with the
exception's traceback: a 403 from ``PermissionDenied`` (an approver who may
not decide a request, a user opening another's session) filled the web log
with stack frames that say nothing an operator can act on. The line keeps
the method, path and status, and the exception's type and message (the only
place a refusal's reason is: "You may not decide this approval."); the frames
go. A 5xx keeps its traceback. ``django.security``'s records (a disallowed
host, a body too large) are left as they are.
"""

from __future__ import annotations

import logging

# How much of an exception's message the line keeps.
MESSAGE_LIMIT = 300


class ClientErrorsWithoutTraceback(logging.Filter):
    """Folds the exception of a record about a response below 500 into its
    message, without the traceback; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500 and record.exc_info:
            error = record.exc_info[1]
            if error is not None:
                said = " ".join(str(error).split())[:MESSAGE_LIMIT]
                reason = (
                    f"{type(error).__name__}: {said}" if said else type(error).__name__
                )
                record.msg = f"{record.getMessage()} ({reason})"
                record.args = None
            record.exc_info = None
            record.exc_text = None
        return True
