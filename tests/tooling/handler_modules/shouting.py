"""A deployment's own handler module, as ``docs/handlers.md`` shows it."""

from __future__ import annotations

import dataclasses

from tooling.handlers import HandlerRegistry
from tooling.runtime import Tool, ToolContext, ToolResult


@dataclasses.dataclass(frozen=True, slots=True)
class ShoutParams:
    text: str = dataclasses.field(
        metadata={"description": "The text to shout.", "max_length": 2000}
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Shout:
    text: str

    def render(self) -> str:
        return self.text


def shout(params: ShoutParams, *, context: ToolContext) -> ToolResult[Shout]:
    return ToolResult.ok(Shout(params.text.upper()), message="Shouted.")


def register_handlers(registry: HandlerRegistry) -> None:
    registry.register(
        "acme.shout",
        Tool(name="shout", description="Shout a text back.", handler=shout),
    )
