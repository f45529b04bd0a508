"""``CallLimitPolicy``: the most calls a run may make to each function tool.

``CallLimitPolicy({"deploy": 1})`` lets a run call ``deploy`` once. A call
past the limit is denied, fail-closed and recorded like any denial
(``PolicyDenied``), and the model reads why: "Tool 'deploy' may be called at
most 1 time(s) per run; this was call 2."

What counts: every call that passed the policies and ran, whether its handler
succeeded or failed (a failed ``deploy`` may still have done something). A
call that was denied (by this policy or another), rejected before the
policies (unknown tool, malformed arguments) or never reached its handler does
not count. The count is taken by the executor's ``before_run`` hook, outside
the handler's transaction, so a failed call's rollback keeps it; it lives in
the session like every policy's state (one slice per policy name), so a
resumed run continues from the recorded count.

Only calls the executor runs can be limited this way: function tools, and
``apply_patch`` / a local shell. A prompt whose call limit names a hosted tool
the provider runs is refused (``check_call_limit_targets``); the prompt's
``hosted_tool_limits`` limit those (``adapters/openai/quotas.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .errors import PromptValidationError
from .limits import MAX_CALLS_PER_RUN, is_call_limit, shown
from .policies import PolicyDecision, state_key

if TYPE_CHECKING:
    from .context import ToolContext
    from .hosted.base import HostedTool
    from .prompt import Prompt
    from .results import ToolResult
    from .tools import Tool


@dataclasses.dataclass(frozen=True, slots=True)
class CallCounts:
    """How many times each limited tool ran in this session."""

    policy_name: str
    counts: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )


class CallLimitPolicy:
    """Each named tool may run at most its limit of times per run (0: never)."""

    def __init__(self, limits: Mapping[str, int], *, name: str = "call_limit") -> None:
        if not isinstance(limits, Mapping) or not limits:
            raise PromptValidationError(
                "CallLimitPolicy needs limits: an object mapping tool names to "
                "the most calls per run."
            )
        checked: dict[str, int] = {}
        for tool_name, limit in limits.items():
            if not isinstance(tool_name, str) or not tool_name.strip():
                raise PromptValidationError(
                    "CallLimitPolicy limits must be keyed by tool names."
                )
            if not is_call_limit(limit):
                raise PromptValidationError(
                    f"The call limit of tool '{tool_name[:80]}' must be a whole "
                    f"number from 0 to {MAX_CALLS_PER_RUN}; got {shown(limit)}.",
                    placeholder=tool_name,
                )
            checked[tool_name] = limit
        self.limits: Mapping[str, int] = MappingProxyType(checked)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def referenced_tools(self) -> frozenset[str]:
        return frozenset(self.limits)

    def _counts(self, context: ToolContext) -> CallCounts:
        state = context.session.get_state(state_key(self.name))
        return state if isinstance(state, CallCounts) else CallCounts(self.name)

    def check(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> PolicyDecision:
        limit = self.limits.get(tool.name)
        if limit is None:
            return PolicyDecision.allow()
        used = self._counts(context).counts.get(tool.name, 0)
        if used >= limit:
            return PolicyDecision.deny(
                f"Tool '{tool.name}' may be called at most {limit} time(s) per "
                f"run; this was call {used + 1}."
            )
        return PolicyDecision.allow()

    def before_run(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> None:
        """Count a call every policy allowed, just before it runs."""
        if tool.name not in self.limits:
            return
        state = self._counts(context)
        counts = dict(state.counts)
        counts[tool.name] = counts.get(tool.name, 0) + 1
        context.session.put_state(
            state_key(self.name),
            dataclasses.replace(state, counts=MappingProxyType(counts)),
        )

    def on_result(
        self,
        tool: Tool[Any, Any],
        params: Any,
        result: ToolResult[Any],
        *,
        context: ToolContext,
    ) -> None:
        return None  # counted in before_run, successful or not


def _runs_here(hosted: HostedTool[Any]) -> bool:
    """Whether the product runs ``hosted``'s calls through the executor (an
    ``apply_patch``, a ``local`` shell: see ``adapters/openai/local_calls``)."""
    if hosted.kind == "apply_patch":
        return True
    return hosted.kind == "shell" and getattr(hosted.config, "environment", "") == (
        "local"
    )


def check_call_limit_targets(prompt: Prompt) -> None:
    """Refuse a ``CallLimitPolicy`` that names a tool the provider runs: its
    calls never reach the executor, so the limit would never apply.
    ``Prompt(hosted_tool_limits=...)`` limits those."""
    provider_run = [
        hosted.name
        for hosted in prompt.declared_hosted_tools()
        if not _runs_here(hosted)
    ]
    provider_run += [tool.name for tool in prompt.declared_tools() if tool.is_native]
    for name in provider_run:
        for policy in prompt.policies_for_tool(name):
            if isinstance(policy, CallLimitPolicy) and name in policy.limits:
                raise PromptValidationError(
                    f"Policy '{policy.name}' limits '{name}', a hosted tool the "
                    "provider runs: no policy sees its calls. Limit them with "
                    "the prompt's hosted tool limits.",
                    placeholder=name,
                )
