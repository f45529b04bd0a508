"""``HostedTool``: a capability the provider executes server-side."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from ..errors import PromptValidationError
from ..tools import validate_description, validate_tool_name
from ..trust import TrustLevel


@runtime_checkable
class HostedToolConfig(Protocol):
    """Marker protocol for hosted tool configurations (frozen dataclasses)."""


@runtime_checkable
class HostedToolOutput(Protocol):
    """Marker protocol for typed outputs parsed from provider items."""


ConfigT = TypeVar("ConfigT", bound=HostedToolConfig)


@dataclasses.dataclass(frozen=True)
class HostedTool(Generic[ConfigT]):
    """A provider-executed tool: ``kind`` picks the codec, ``config`` its options.

    Names share one namespace with function tools in a prompt. There is no
    handler: a hosted tool can never run locally. ``min_trust`` is the lowest
    session trust level it is offered at (a label such as ``"trusted"`` is
    accepted too).
    """

    kind: str
    name: str
    description: str
    config: ConfigT
    min_trust: TrustLevel = TrustLevel.STANDARD

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_trust", TrustLevel.parse(self.min_trust))
        validate_tool_name(self.name, owner="HostedTool")
        object.__setattr__(
            self,
            "description",
            validate_description(self.description, owner="HostedTool"),
        )
        if not isinstance(self.kind, str) or not self.kind.strip():
            raise PromptValidationError("HostedTool kind must be a non-empty string.")
        params = getattr(type(self.config), "__dataclass_params__", None)
        if params is None or not params.frozen:
            raise PromptValidationError(
                "HostedTool config must be a frozen dataclass.", placeholder="config"
            )

    @property
    def handler(self) -> None:
        """Always ``None``: hosted tools are executed by the provider."""
        return None

    @property
    def is_native(self) -> bool:
        return True


def unsupported_kind_message(
    model: str, allowed: Iterable[str], hosted_tools: Iterable[HostedTool[Any]]
) -> str | None:
    """Why ``model`` cannot be offered ``hosted_tools`` (its allow-list is
    ``allowed``), or ``None`` when every kind is allowed. The adapter and the
    catalog admin give the same message."""
    kinds = frozenset(allowed)
    for hosted in hosted_tools:
        if hosted.kind not in kinds:
            return (
                f"Model '{model}' does not support hosted tool kind "
                f"'{hosted.kind}' (tool '{hosted.name}'); it supports: "
                f"{', '.join(sorted(kinds)) or 'no hosted tools'}."
            )
    return None


def frozen_tuple(value: Any) -> tuple[Any, ...]:
    """Accept any iterable of items (but not a bare string) as a tuple."""
    if isinstance(value, str):
        return (value,)
    return tuple(value)
