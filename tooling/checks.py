"""System checks of the catalog app (``manage.py check`` runs them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

from tooling.handlers import HandlerRegistry, load_handler_modules


@checks.register()
def check_handler_modules(
    *,
    app_configs: Sequence[AppConfig] | None = None,
    databases: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[checks.CheckMessage]:
    """``tooling.E001``: each module of ``WINK_HANDLER_MODULES`` registers its
    handlers (loaded into a registry of their own: the product's is untouched)."""
    modules = getattr(settings, "WINK_HANDLER_MODULES", [])
    return [
        checks.Error(
            str(error),
            hint="Fix the module or take it out of WINK_HANDLER_MODULES "
            "(docs/handlers.md); its handlers are not registered.",
            id="tooling.E001",
        )
        for error in load_handler_modules(modules, HandlerRegistry())
    ]
