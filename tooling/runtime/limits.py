"""The checks of a prompt's per-run call limits (docs/quotas.md).

Two kinds of limit share one rule for their numbers (``is_call_limit``): a
prompt's ``hosted_tool_limits`` (``check_hosted_tool_limits``; enforced by
what each request offers, ``adapters/openai/quotas.py``) and a
``CallLimitPolicy`` (``call_limits.py``; enforced by the executor). Each kind
refuses the other's tools, with a pointer to the right one, since a limit put
on the wrong kind would never apply (``check_call_limit_targets`` in
``call_limits.py`` is the policy's side).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import PromptValidationError

if TYPE_CHECKING:
    from .prompt import Prompt

# The most calls per run a limit may name (far above any run's turns; a bigger
# number is a typo, not a limit).
MAX_CALLS_PER_RUN = 10_000


def is_call_limit(value: Any) -> bool:
    """Whether ``value`` is a whole number from 0 to ``MAX_CALLS_PER_RUN``
    (``True`` and ``2.0`` are not)."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value <= MAX_CALLS_PER_RUN
    )


def shown(value: Any) -> str:
    """``value`` for a message: short, and never ``str()`` of a huge integer
    (which Python refuses past 4300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(value) if abs(value) < 10**12 else "a number too large"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "\u2026"


def check_hosted_tool_limits(prompt: Prompt, limits: Any) -> Mapping[str, int]:
    """``limits`` checked against ``prompt``: names of its hosted (or native)
    tools, each the most calls per run (0: never offered)."""
    if not isinstance(limits, Mapping):
        raise PromptValidationError(
            "hosted_tool_limits must map hosted tool names to call limits."
        )
    hosted = [h.name for h in prompt.declared_hosted_tools()]
    hosted += [t.name for t in prompt.declared_tools() if t.is_native]
    functions = {t.name for t in prompt.declared_tools() if not t.is_native}
    checked: dict[str, int] = {}
    for name, limit in limits.items():
        if not isinstance(name, str) or name not in hosted:
            what = (
                "a function tool; limit its calls with a call_limit policy"
                if name in functions
                else f"not a hosted tool of prompt '{prompt.ns}/{prompt.key}'"
            )
            label = f"'{name[:80]}'" if isinstance(name, str) else shown(name)
            raise PromptValidationError(
                f"hosted_tool_limits names {label}, which is {what} "
                f"(its hosted tools: {', '.join(hosted) or 'none'}).",
                placeholder=name if isinstance(name, str) else None,
            )
        if not is_call_limit(limit):
            raise PromptValidationError(
                f"The call limit of hosted tool '{name}' must be a whole number "
                f"from 0 to {MAX_CALLS_PER_RUN}; got {shown(limit)}.",
                placeholder=name,
            )
        checked[name] = limit
    choice = prompt.tool_choice
    forced = choice.tools[0] if choice and choice.mode == "tool" else None
    if forced is not None and checked.get(forced) == 0:
        raise PromptValidationError(
            f"tool_choice forces '{forced}', which its call limit of 0 never offers.",
            placeholder=forced,
        )
    return MappingProxyType(checked)
