"""System checks of the audit app (``manage.py check``; ``--deploy`` for the
deployment ones)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

DEVELOPMENT_BASE_URL = "http://127.0.0.1:8000"


@checks.register(checks.Tags.security, deploy=True)
def check_base_url(
    *,
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    """``sessions_app.W001``: approval emails and webhooks link to
    ``WINK_BASE_URL``; in production the development default sends approvers
    to their own machine."""
    if getattr(settings, "WINK_BASE_URL", DEVELOPMENT_BASE_URL) != DEVELOPMENT_BASE_URL:
        return []
    return [
        checks.Warning(
            f"WINK_BASE_URL is the development default ({DEVELOPMENT_BASE_URL}): "
            "the links in approval emails and webhooks would point at the "
            "approver's own machine.",
            hint="Set WINK_BASE_URL to the address people open the product at "
            "(https://catalog.example.com).",
            id="sessions_app.W001",
        )
    ]
