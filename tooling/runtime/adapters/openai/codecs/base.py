"""The ``HostedToolCodec`` protocol: one codec per hosted tool kind."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ....hosted.base import HostedTool

ConfigT = TypeVar("ConfigT")
OutputT = TypeVar("OutputT", covariant=True)


@dataclasses.dataclass(frozen=True, slots=True)
class NativeCall:
    """One provider-executed call, as a codec reads it from an output item."""

    call_id: str
    params: Mapping[str, Any]
    value: Any
    success: bool
    message: str
    rendered: str


class HostedToolCodec(Protocol[OutputT]):
    """Serialises a hosted tool to the wire and parses what it produced.

    ``item_types`` are the output item types the codec understands;
    ``parse_call`` turns one such item into a ``NativeCall`` (or ``None`` for
    items that are not calls, such as ``mcp_list_tools``). ``include`` lists
    the ``include`` values the codec needs on every request.
    """

    @property
    def kind(self) -> str: ...

    @property
    def item_types(self) -> tuple[str, ...]: ...

    @property
    def include(self) -> tuple[str, ...]: ...

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]: ...

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]: ...

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool: ...

    def parse_call(self, item: Any) -> NativeCall | None: ...

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> OutputT | None: ...


def field(item: Any, name: str, default: Any = None) -> Any:
    """Read a field from an SDK model or a dict; missing reads as ``default``."""
    if isinstance(item, Mapping):
        value = item.get(name, default)
    else:
        value = getattr(item, name, default)
    return default if value is None else value


def status_ok(status: str | None) -> bool:
    return status in (None, "completed")
