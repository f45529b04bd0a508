"""The model's function calls: each item read as the executor takes it, and
the input item that answers it.

The item is untrusted: arguments that are not a JSON-encoded string, a missing
or repeated ``call_id`` make a call that carries the problem (``FunctionCall``
``problem``), which the executor records as the call's failure, never runs,
and the model can read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...execution.calls import FunctionCall
from .codecs.base import field
from .send_failures import excerpt


def function_call(item: Any, turn: int, call_ids: set[str]) -> FunctionCall:
    """The ``function_call`` item of ``turn`` as the executor takes it;
    ``call_ids`` holds the call ids the run has seen (this one is added)."""
    name = field(item, "name", "")
    call_id = field(item, "call_id") or field(item, "id")
    arguments = field(item, "arguments", "")
    problem: str | None = None
    if not isinstance(arguments, str):
        kind = "an object" if isinstance(arguments, Mapping) else "not a string"
        problem = (
            f"Tool validation failed: arguments must be a JSON-encoded string; "
            f"the model sent {kind}."
        )
        arguments = json.dumps(arguments, ensure_ascii=False, default=str)
    if not isinstance(call_id, str) or not call_id:
        problem = "The function call has no call_id; it was not run."
        call_id = None
    elif call_id in call_ids:
        problem = (
            f"The call_id '{excerpt(call_id, 100)}' was already used by an "
            "earlier function call of this run; this call was not run."
        )
    else:
        call_ids.add(call_id)
    return FunctionCall(
        name=name if isinstance(name, str) else json.dumps(name, default=str),
        arguments=arguments,
        call_id=call_id,
        turn=turn,
        problem=problem,
    )


def function_call_output(call: FunctionCall, output: str) -> dict[str, Any]:
    """The input item that hands the model ``output``, the answer to ``call``."""
    return {"type": "function_call_output", "call_id": call.call_id, "output": output}
