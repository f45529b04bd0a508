"""What a reasoning model adds to a turn, and the token counts of a response.

The offline model reasons when the request asks for it (``reasoning.effort``
other than ``none``) or the prompt carries ``[offline:reasoning]``: each
response then starts with a ``reasoning`` item, its web search opens a page
and searches in it after searching (``open_page`` and ``find_in_page`` happen
only with reasoning models), and its usage counts reasoning tokens. The item
carries ``encrypted_content`` only when the request includes
``reasoning.encrypted_content``, and a summary only when
``reasoning.summary`` is set, as the real API does.

Cached input tokens are counted on every response, as the real API's prompt
cache does: a request whose input starts with the previous request's input
(the history before the model's last output) reads that prefix from the cache
once it is at least 1,024 tokens, in steps of 128.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .context import Context, digest

MARKER_REASONING = "[offline:reasoning]"
REASONING_TOKENS_PER_ITEM = 64
CACHE_MINIMUM = 1_024
CACHE_STEP = 128

# Items the model wrote (replayed in the input); every other input item is
# the product's: a message of the user, system or developer, or an answer.
_INPUT_ROLES = frozenset({"user", "system", "developer"})


def reasons(ctx: Context) -> bool:
    """Whether this turn is played by a reasoning model."""
    if MARKER_REASONING in ctx.marker_text:
        return True
    reasoning = ctx.request.get("reasoning")
    if not isinstance(reasoning, Mapping):
        return False
    effort = reasoning.get("effort")
    return isinstance(effort, str) and effort != "none"


def reasoning_item(ctx: Context, thought: str) -> dict[str, Any]:
    """One ``reasoning`` item about ``thought``."""
    item: dict[str, Any] = {"id": ctx.ids.new("rs"), "type": "reasoning", "summary": []}
    reasoning = ctx.request.get("reasoning")
    summary = reasoning.get("summary") if isinstance(reasoning, Mapping) else None
    if summary in ("auto", "concise", "detailed"):
        item["summary"] = [{"type": "summary_text", "text": thought}]
    if "reasoning.encrypted_content" in ctx.include:
        # opaque to the client, as the real one is (not encrypted: offline)
        blob = json.dumps({"offline": digest(ctx.ids.seed, thought)[:32]})
        item["encrypted_content"] = "gAAAAA" + base64.b64encode(blob.encode()).decode()
    return item


def _is_model_item(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    kind, role = item.get("type"), item.get("role")
    if role in _INPUT_ROLES and kind in (None, "message"):
        return False
    return not (
        isinstance(kind, str)
        and (kind.endswith("_output") or kind in ("mcp_approval_response",))
    )


def cached_tokens(request_input: Any) -> int:
    """The input tokens the prompt cache serves: the prefix up to the model's
    last output (what the previous request sent), when long enough."""
    if not isinstance(request_input, list):
        return 0
    start = None
    for index, item in enumerate(request_input):
        model = _is_model_item(item)
        previous = index > 0 and _is_model_item(request_input[index - 1])
        if model and not previous:
            start = index
    if start is None:
        return 0
    tokens = len(json.dumps(request_input[:start])) // 4
    return 0 if tokens < CACHE_MINIMUM else tokens - tokens % CACHE_STEP


def usage_of(request: Mapping[str, Any], output: Sequence[Any]) -> dict[str, Any]:
    """The ``usage`` object of a response: about four characters a token,
    cached input as above, and the reasoning items' tokens in the output."""
    input_tokens = len(json.dumps(request.get("input"))) // 4
    reasoning = REASONING_TOKENS_PER_ITEM * sum(
        1 for item in output if item.get("type") == "reasoning"
    )
    output_tokens = len(json.dumps(list(output))) // 4 + reasoning
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens(request.get("input"))},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }
