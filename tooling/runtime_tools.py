"""The runtime's own tool suites as handlers: ``planning.*`` and ``vfs.*``.

A handler module (``WINK_HANDLER_MODULES``, ``docs/handlers.md``); the tools
themselves live in the runtime, which knows nothing of the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooling.runtime.planning import planning_tools
from tooling.runtime.vfs import vfs_tools

if TYPE_CHECKING:
    from tooling.handlers import HandlerRegistry


def register_handlers(registry: HandlerRegistry) -> None:
    registry.register_group("planning", planning_tools())
    registry.register_group("vfs", vfs_tools())
