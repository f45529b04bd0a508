"""Registers a fresh key, then one the product's demo module already holds."""

from __future__ import annotations

from tooling.builtin_tools import demo_tools
from tooling.handlers import HandlerRegistry


def register_handlers(registry: HandlerRegistry) -> None:
    lint = demo_tools()[0]
    registry.register("clashing.lint", lint)
    registry.register("demo.lint", lint)
