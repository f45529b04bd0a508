"""``ToolResult``: what a handler returns to the model and to the audit trail."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from .serde import dump

logger = logging.getLogger(__name__)

ResultT = TypeVar("ResultT")


@runtime_checkable
class ToolRenderableResult(Protocol):
    """A result value that renders itself as the text the model reads.

    ``ToolResult.render()`` uses a value's own ``render()`` when it has one
    (a dataclass without one is rendered as compact JSON of
    ``serde.dump(value, exclude_none=True)``). It must return a string and
    should be deterministic: the same text is sent to the provider and
    recorded on ``ToolInvoked``.
    """

    def render(self) -> str: ...


@dataclasses.dataclass(slots=True)
class ToolResult(Generic[ResultT]):
    """The outcome of one tool call.

    ``message`` is the short reply the model reads; ``value`` the typed payload
    (``None`` on failure); ``success`` the only flag consumers should branch on.
    ``exclude_value_from_context`` hides the value from the model (it is still
    recorded: it is not a security boundary).
    """

    message: str
    value: ResultT | None = None
    success: bool = True
    exclude_value_from_context: bool = False

    @classmethod
    def ok(cls, value: ResultT | None, message: str = "OK") -> ToolResult[ResultT]:
        return cls(message=message, value=value, success=True)

    @classmethod
    def error(cls, message: str) -> ToolResult[ResultT]:
        return cls(message=message, value=None, success=False)

    def render(self) -> str:
        """The value as text: a dataclass's own ``render()`` or JSON."""
        return render_tool_payload(self.value)

    def model_text(self) -> str:
        """The exact text sent to the model as the tool's output."""
        if self.exclude_value_from_context:
            return self.message
        rendered = self.render()
        if not self.message:
            return rendered
        if not rendered:
            return self.message
        return f"{self.message}\n\n{rendered}"


def render_tool_payload(value: Any) -> str:
    """Render a tool value to text, following the seeds' rendering rules; a
    value that cannot be written as text (an integer of more than 4,300
    digits, a structure nested too deeply) is named instead of raising."""
    try:
        return _render(value)
    except (ValueError, RecursionError) as error:
        logger.warning("A tool value could not be rendered: %s", error)
        kind = type(error).__name__
        return f"[the tool's value could not be rendered as text: {kind}]"


def _render(value: Any) -> str:
    if value is None:
        return ""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        renderer = getattr(value, "render", None)
        if callable(renderer):
            try:
                rendered = renderer()
            except Exception:  # a broken render() falls back to JSON
                logger.debug("render() of %s failed; using JSON", type(value).__name__)
            else:
                return rendered if isinstance(rendered, str) else str(rendered)
        return json.dumps(dump(value, exclude_none=True), ensure_ascii=False)
    if isinstance(value, Mapping):
        return json.dumps(dump(value, exclude_none=True), ensure_ascii=False)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        if not value:
            return "[]"
        parts = [_render(item) for item in value]
        try:
            return json.dumps([json.loads(part) for part in parts], ensure_ascii=False)
        except (ValueError, RecursionError):  # a part that is not JSON (or too deep)
            return "\n\n".join(part for part in parts if part)
    return str(value)
