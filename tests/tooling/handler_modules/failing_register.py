"""``register_handlers`` raises (here: a tool without a handler function)."""

from __future__ import annotations

from tooling.handlers import HandlerRegistry
from tooling.runtime import Tool


def register_handlers(registry: HandlerRegistry) -> None:
    registry.register("failing.nothing", Tool(name="nothing", description="None."))
