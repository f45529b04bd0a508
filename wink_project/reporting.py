"""What DEBUG pages and error reports may show: no credential, ever.

Django's default filter hides settings and request.META entries named like
API|TOKEN|KEY|SECRET|PASS|SIGNATURE. Here: also anything named like a URL, DSN,
database, broker, result backend, auth, cookie or credential (runserver copies
the environment into request.META, so DATABASE_URL and CELERY_BROKER_URL are
there), the Authorization header, and the variables MCP header secrets are read
from (WINK_MCP_*, or the configured prefix and allow-list). Any other value that
carries a password in a URL (scheme://user:password@host) has it masked.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.views.debug import SafeExceptionReporterFilter

_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s]*@", re.IGNORECASE)


def _mcp_header_variable(name: str) -> bool:
    """Whether an MCP header may read the variable ``name`` (see
    ``tooling.assembly.hosted.allowed_header_variable``)."""
    prefix = getattr(settings, "WINK_MCP_HEADER_ENV_PREFIX", "")
    allowed = getattr(settings, "WINK_MCP_HEADER_ENV_ALLOW", ())
    return bool(prefix and name.startswith(prefix)) or name in allowed


class SecretHidingReporterFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|COOKIE|AUTH|CREDENTIAL|URL|DSN|"
        "DATABASE|BROKER|RESULT_BACKEND|^WINK_MCP_",
        flags=re.IGNORECASE,
    )

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        if isinstance(key, str) and _mcp_header_variable(key):
            return self.cleansed_substitute
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str):
            return _URL_USERINFO.sub(rf"\1{self.cleansed_substitute}@", cleansed)
        return cleansed
