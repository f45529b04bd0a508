"""The cooperative scripted model: a Responses API request dict in, a response out.

``ScriptedModel.respond`` reads the whole (stateless, manually replayed)
history in ``request["input"]`` and decides deterministically what a helpful
model would do next:

1. on its first turn, run every offered hosted tool once (``web_search``,
   ``file_search``, ``code_interpreter``, ``image_generation``, ``mcp``; an
   ``mcp`` server that requires approval is asked first, and the call played
   once the ``mcp_approval_response`` approves it), and,
   turn by turn, the ``apply_patch`` and local shell calls the product itself
   executes and answers (``patches.py``); never more built-in calls in one
   response than the request's ``max_tool_calls``; with the marker
   ``[offline:search_each_turn]`` in the prompt it searches again on every
   turn while ``web_search`` is offered (calling the first function tool
   again to keep the conversation going), as a quota demo needs;
2. call every offered function tool not yet attempted, in offered order, as
   parallel ``function_call`` items with arguments valid for its schema;
3. recover from the runtime's recoverable denials (``Tool 'x' requires: a, b``
   and ``File 'p' must be read before overwriting.``) by calling the missing
   prerequisite, then retrying the denied call with the same arguments;
4. otherwise answer with a ``message`` summarising the tool outcomes, citing
   web sources with ``url_citation`` annotations (also inside JSON answers).

Everything is derived from a hash of the request: same request, same bytes.
Only the standard library is used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from .answer import message_item
from .calls import dumps_args, function_tools, plan_calls
from .context import Context, Ids, allowed_names, query_for
from .history import parse_history
from .hosted import (
    MARKER_SEARCH_EACH_TURN,
    awaits_approval,
    hosted_items,
    within_tool_call_limit,
)
from .markers import (
    commentary_item,
    comments,
    only_comments,
    played_status,
    with_status,
)
from .patches import awaits_answer, local_items
from .reasoning import reasoning_item, reasons
from .response import build_response, token_usage, validate_request
from .schema_values import sample_value

__all__ = ["ScriptedModel", "parallel_calls_script"]

MAX_CALLING_TURNS = 8

Script = Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedModel:
    """A deterministic, cooperative stand-in for a Responses API model.

    Without ``script`` it plans each turn from the request's history (see the
    module docstring). With ``script``, ``respond`` returns ``script(request)``
    unchanged: benchmarks and tests use that to play a fixed conversation.
    """

    def __init__(self, script: Script | None = None) -> None:
        self.script = script

    def respond(self, request: dict[str, Any]) -> dict[str, Any]:
        """The response object for one ``POST /v1/responses`` body.

        Raises ``OfflineRequestError`` for requests the real API rejects.
        """
        if self.script is not None:
            return self.script(request)
        validate_request(request)
        history = parse_history(request["input"])
        seed = hashlib.sha256(
            json.dumps(request, sort_keys=True, default=str).encode()
        ).hexdigest()
        instructions = str(request.get("instructions") or "")
        ctx = Context(
            request=request,
            history=history,
            ids=Ids(seed),
            tools=list(request.get("tools") or []),
            include=frozenset(str(v) for v in request.get("include") or []),
            query=query_for(history, instructions),
            marker_text="\n".join([instructions, *(t for _r, t in history.messages)]),
        )
        output = self._turn(ctx)
        turn = history.prior_turns + 1
        response = build_response(
            request, output, response_id=f"resp_{seed[:12]}", turn=turn
        )
        status = played_status(ctx)
        return response if status is None else with_status(response, status)

    def _turn(self, ctx: Context) -> list[dict[str, Any]]:
        allowed = allowed_names(ctx.request.get("tool_choice", "auto"))
        output: list[dict[str, Any]] = []
        if reasons(ctx):
            output.append(reasoning_item(ctx, f'Planning how to answer "{ctx.query}".'))
        if comments(ctx):
            output.append(commentary_item(ctx))
        if only_comments(ctx):
            return output  # not an answer: the product sends the history again
        if allowed != set():
            output.extend(within_tool_call_limit(ctx, hosted_items(ctx, allowed)))
            local = local_items(ctx, lambda key: allowed is None or key in allowed)
            output.extend(local)
            # a turn of product-executed calls (patches, local commands) is
            # that turn's whole plan: its script asks for reads itself
            if not local and ctx.history.calling_turns < MAX_CALLING_TURNS:
                functions = function_tools(ctx.tools)
                planned = [
                    (name, arguments)
                    for name, arguments in plan_calls(
                        ctx.history, functions, ctx.marker_text
                    )
                    if allowed is None or f"function:{name}" in allowed
                ]
                if not planned and functions and _searched_again(ctx, output):
                    # keep the conversation going while it may search again
                    name, schema = next(iter(functions.items()))
                    planned = [(name, dumps_args(sample_value(schema)))]
                if ctx.request.get("parallel_tool_calls") is False:
                    planned = planned[:1]
                for name, arguments in planned:
                    output.append(
                        {
                            "id": ctx.ids.new("fc"),
                            "type": "function_call",
                            "call_id": ctx.ids.new("call"),
                            "name": name,
                            "arguments": arguments,
                            "status": "completed",
                        }
                    )
        # the product answers a call or an approval request before the model goes on
        if not any(awaits_answer(item) or awaits_approval(item) for item in output):
            output.append(message_item(ctx, output))
        return output


def _searched_again(ctx: Context, output: list[dict[str, Any]]) -> bool:
    return MARKER_SEARCH_EACH_TURN in ctx.marker_text and any(
        item.get("type") == "web_search_call" for item in output
    )


def parallel_calls_script(
    turns: int = 5, calls_per_turn: int = 2, tool_name: str = "echo"
) -> Script:
    """The benchmark conversation as a ``ScriptedModel`` script.

    Turn ``k`` (the number of ``function_call_output`` items in the input,
    divided by ``calls_per_turn``) answers ``calls_per_turn`` parallel calls to
    ``tool_name`` with ``{"text": "turn k call j"}``; after ``turns`` answered
    turns it replies "done". ``turns + 1`` POSTs in all. Responses are built
    once, up front; each request only counts outputs and copies one dict.
    """
    if turns < 0 or calls_per_turn < 1:
        raise ValueError("turns must be >= 0 and calls_per_turn >= 1.")
    bodies: list[dict[str, Any]] = []
    for turn in range(turns + 1):
        output: list[dict[str, Any]]
        if turn < turns:
            output = [
                {
                    "id": f"fc_bench_{turn + 1}_{call + 1}",
                    "type": "function_call",
                    "call_id": f"call_bench_{turn + 1}_{call + 1}",
                    "name": tool_name,
                    "arguments": json.dumps(
                        {"text": f"turn {turn + 1} call {call + 1}"}
                    ),
                    "status": "completed",
                }
                for call in range(calls_per_turn)
            ]
        else:
            output = [
                {
                    "id": "msg_bench_done",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "done",
                            "annotations": [],
                            "logprobs": [],
                        }
                    ],
                }
            ]
        bodies.append(
            build_response(
                {"model": "offline-bench", "parallel_tool_calls": True},
                output,
                response_id=f"resp_bench_{turn + 1}",
                turn=turn + 1,
                usage=token_usage(100 * (turn + 1), 20),
            )
        )

    def script(request: dict[str, Any]) -> dict[str, Any]:
        items = request.get("input")
        answered = 0
        if isinstance(items, list):
            answered = sum(
                1
                for item in items
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            )
        body = bodies[min(answered // calls_per_turn, turns)]
        return {**body, "model": request.get("model", body["model"])}

    return script
