"""Gunicorn's logger, with the project's masking of secrets
(``log_masking.SecretMaskingFilter``) on its access and error logs.

Gunicorn writes its own lines, not through Django's logging: an access line
holds the request's query string (``?token=...``, a key pasted into an
address) and its referrer, which the project's handler never sees.
``gunicorn.conf.py`` names this class as its ``logger_class``.
"""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from wink_project.log_masking import SecretMaskingFilter


class MaskingLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.access_log, self.error_log):
            if not any(isinstance(f, SecretMaskingFilter) for f in log.filters):
                log.addFilter(SecretMaskingFilter())
