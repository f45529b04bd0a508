"""``register_handlers`` that registers no handler."""

from __future__ import annotations

from tooling.handlers import HandlerRegistry


def register_handlers(registry: HandlerRegistry) -> None:
    del registry
