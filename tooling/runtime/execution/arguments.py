"""Parsing a function call's arguments into its tool's parameters."""

from __future__ import annotations

import json
from typing import Any

from ..events import RejectedToolParams
from ..serde import SerdeError, parse
from ..text import sendable
from ..tools import Tool
from .calls import FunctionCall


def parse_arguments(tool: Tool[Any, Any], call: FunctionCall) -> Any:
    """The tool's parameters (``None`` for a tool without any), or
    ``RejectedToolParams`` saying why the arguments do not fit."""
    raw = call.arguments or ""
    try:
        decoded = json.loads(raw) if raw.strip() else {}
    except ValueError as error:
        return RejectedToolParams(
            raw, f"Tool validation failed: arguments are not valid JSON ({error})."
        )
    except RecursionError:  # deeper than Python's JSON decoder goes
        return RejectedToolParams(
            raw,
            "Tool validation failed: arguments are not valid JSON (nested too deeply).",
        )
    if not isinstance(decoded, dict):
        return RejectedToolParams(
            raw, "Tool validation failed: arguments must be a JSON object."
        )
    decoded = sendable(decoded)[0]  # "\\ud800" decodes to a lone surrogate
    if tool.params_type is None:
        if decoded:
            return RejectedToolParams(
                raw, "Tool validation failed: Tool does not accept any arguments."
            )
        return None
    try:
        return parse(tool.params_type, decoded)
    except SerdeError as error:
        return RejectedToolParams(raw, f"Tool validation failed: {error}")
