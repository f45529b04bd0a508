"""The handler registry: the only Python code a catalog tool can be bound to.

Operators pick a handler by key in the admin; they can never type an import
path. Each entry is a runtime ``Tool`` carrying the handler, its types, its
default name and description, and whether it accepts overrides.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tooling.runtime import Tool


class HandlerRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any, Any]] = {}

    def register(self, key: str, tool: Tool[Any, Any]) -> None:
        if key in self._tools:
            raise ValueError(f"Handler '{key}' is already registered.")
        if tool.handler is None:
            raise ValueError(f"Handler '{key}' has no handler function.")
        self._tools[key] = tool

    def register_group(self, group: str, tools: Iterable[Tool[Any, Any]]) -> None:
        for tool in tools:
            self.register(f"{group}.{tool.name}", tool)

    def unregister(self, key: str) -> Tool[Any, Any]:
        """Remove a handler; catalog revisions that name it can no longer run."""
        try:
            return self._tools.pop(key)
        except KeyError:
            raise KeyError(f"No handler is registered as '{key}'.") from None

    def get(self, key: str) -> Tool[Any, Any]:
        try:
            return self._tools[key]
        except KeyError:
            raise KeyError(f"No handler is registered as '{key}'.") from None

    def __contains__(self, key: object) -> bool:
        return key in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._tools))

    def choices(self) -> list[tuple[str, str]]:
        return [(key, f"{key}: {self._tools[key].description}") for key in self]


def _default_registry() -> HandlerRegistry:
    from tooling.builtin_tools import demo_tools
    from tooling.runtime.planning import planning_tools
    from tooling.runtime.vfs import vfs_tools
    from tooling.text_tools import text_tools

    registry = HandlerRegistry()
    registry.register_group("planning", planning_tools())
    registry.register_group("vfs", vfs_tools())
    registry.register_group("demo", demo_tools())
    registry.register_group("demo", text_tools())
    return registry


registry = _default_registry()
