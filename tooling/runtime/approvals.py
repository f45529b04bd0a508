"""Approval as a policy outcome: calls a human must allow before they run.

``ApprovalPolicy`` names the tools that need a human "yes", optionally only
when their arguments match a condition (``{"tool": "deploy", "when":
{"environment": "production"}}``). Its check *asks* (``PolicyDecision.ask``)
and the executor pauses the run (``ApprovalPending``); the host stores the
request, lets a human decide, and resumes the run with the decision in
``RunRecord.approvals``. The resumed run reaches the same call again and finds
the decision in ``ToolContext.approval``: approved, the policy allows; denied
or expired, it denies with a reason naming who decided and why, which the
model reads as the call's result.

The rules and their conditions, and the checks of a policy's parts, are
``approval_rules``'.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from .approval_rules import (
    ApprovalRule,
    check_approvers,
    check_deadline,
    check_four_eyes,
    check_rule,
)
from .errors import PromptValidationError
from .policies import PolicyDecision
from .serde import dump
from .text import storable_text

if TYPE_CHECKING:
    from .context import ToolContext
    from .results import ToolResult
    from .tools import Tool

DecisionStatus = Literal["approved", "denied", "expired"]
DECISION_STATUSES: tuple[str, ...] = ("approved", "denied", "expired")


def format_duration(seconds: int) -> str:
    """``90`` -> ``"1m 30s"``, ``3600`` -> ``"1h"``, ``90000`` -> ``"1d 1h"``."""
    parts: list[str] = []
    remaining = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if remaining >= size:
            parts.append(f"{remaining // size}{unit}")
            remaining %= size
    return " ".join(parts[:2]) or "0s"


def mismatch_reason(call_id: str) -> str:
    """What the model reads for a call whose id carries a decision made for
    another call (the id was reused, or the response differs from the one
    the human saw): it does not run, fail closed."""
    return (
        f"The call id '{call_id[:100]}' carries a human decision made for a "
        "different call (another tool, turn or arguments); this call was not run."
    )


def expiry_reason(seconds: int) -> str:
    """What the model reads when nobody decided in time."""
    return f"No decision within {format_duration(seconds)}; denied automatically."


@dataclasses.dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """A human's decision on one paused call (or the automatic denial of an
    expired request), handed back to the runtime by the host.

    ``decided_by`` is the approver's user name (empty for an expiry);
    ``reason`` what they wrote (for an expiry: ``expiry_reason``).

    ``kind``, ``tool_name``, ``arguments`` (the raw arguments, as stored) and
    ``turn`` bind the decision to the call the human saw (``None``: not
    bound). The decisions are keyed by call id, an id the provider chose: a
    resumed run applies one only to the very call it was made for
    (``applies_to``), so a reused or colliding id, or a response that differs
    from the one recorded, can never run a call nobody approved.

    ``policy_name`` is the policy the request was made under (for an MCP
    request: the hosted tool's name): only that policy reads it. ``None``
    binds it to no policy: it answers every policy of its call that asks, as
    decisions did before they were made per policy (a host that knows the
    policy binds it; the product always does).
    """

    approved: bool
    decided_by: str = ""
    reason: str = ""
    status: DecisionStatus = "approved"
    kind: str | None = None
    tool_name: str | None = None
    arguments: str | None = None
    turn: int | None = None
    policy_name: str | None = None

    def __post_init__(self) -> None:
        if self.status not in DECISION_STATUSES:
            raise ValueError(
                f"status must be one of {', '.join(DECISION_STATUSES)}, "
                f"not {self.status!r}."
            )
        if self.approved != (self.status == "approved"):
            raise ValueError("approved must be true exactly when status is 'approved'.")

    def applies_to(
        self, *, kind: str, tool_name: str, arguments: str, turn: int
    ) -> bool:
        """Whether this decision was made for this call: every bound field
        equals the call's (texts compared as the host stores them: NUL bytes
        and lone surrogates replaced)."""
        return (
            (self.kind is None or self.kind == kind)
            and (self.turn is None or self.turn == turn)
            and (
                self.tool_name is None or self.tool_name == storable_text(tool_name)[0]
            )
            and (
                self.arguments is None or self.arguments == storable_text(arguments)[0]
            )
        )

    def denial(self) -> str:
        """The text the model reads for a call that was not approved."""
        if self.status == "expired":
            return self.reason or "No decision in time; denied automatically."
        who = self.decided_by or "an approver"
        reason = self.reason.strip()
        return f"Denied by {who}: {reason}" if reason else f"Denied by {who}."


Decisions: TypeAlias = Mapping[str, ApprovalDecision | Sequence[ApprovalDecision]]
"""A run's decisions by call id (``RunRecord.approvals``): the call's
decision, or its decisions (one per policy that asked about it)."""


def decisions_on(
    decisions: Decisions, call_id: str | None
) -> tuple[ApprovalDecision, ...]:
    """The decisions made on the call ``call_id`` (none without an id)."""
    if not call_id:
        return ()
    found = decisions.get(call_id)
    if found is None:
        return ()
    return (found,) if isinstance(found, ApprovalDecision) else tuple(found)


def decision_under(
    decisions: Sequence[ApprovalDecision], policy_name: str
) -> ApprovalDecision | None:
    """Of one call's decisions, the one made under ``policy_name``; else one
    bound to no policy (``policy_name=None``); else ``None``: that policy has
    not been answered, whatever the others were."""
    unbound: ApprovalDecision | None = None
    for decision in decisions:
        if decision.policy_name == policy_name:
            return decision
        if decision.policy_name is None and unbound is None:
            unbound = decision
    return unbound


class ApprovalPolicy:
    """Calls matching a rule wait for a human decision before they run.

    ``approvers`` (``{"permission": ...}`` and/or ``{"group": ...}``; empty:
    the host's default approvers), ``deadline_seconds`` (``None``: the
    host's default) and ``four_eyes`` (``True``: the run's author may not
    decide; ``None``: the host's default) travel with the request. A call
    this policy does not match is allowed; the other policies of the tool
    still apply. It reads only the decision made under its own name.
    """

    def __init__(
        self,
        rules: Sequence[Mapping[str, Any]],
        *,
        approvers: Mapping[str, str] | None = None,
        deadline_seconds: int | None = None,
        four_eyes: bool | None = None,
        name: str = "approval",
    ) -> None:
        if isinstance(rules, str | bytes | Mapping) or not isinstance(rules, Sequence):
            raise PromptValidationError(
                'rules must be a list such as [{"tool": "deploy", "when": '
                '{"environment": "production"}}].',
                placeholder="rules",
            )
        if not rules:
            raise PromptValidationError(
                "An approval policy needs at least one rule naming a tool.",
                placeholder="rules",
            )
        self._name = name
        self.rules = tuple(check_rule(index, raw) for index, raw in enumerate(rules))
        self.approvers = check_approvers(approvers)
        self.deadline_seconds = check_deadline(deadline_seconds)
        self.four_eyes = check_four_eyes(four_eyes)

    @property
    def name(self) -> str:
        return self._name

    def referenced_tools(self) -> frozenset[str]:
        return frozenset(rule.tool for rule in self.rules)

    def referenced_arguments(self) -> Mapping[str, frozenset[str]]:
        """The argument names the rules' conditions read, by tool (dotted for
        nested arguments): the prompt checks that its tools take them."""
        names: dict[str, set[str]] = {}
        for rule in self.rules:
            names.setdefault(rule.tool, set()).update(rule.when)
        return MappingProxyType({tool: frozenset(keys) for tool, keys in names.items()})

    def matching_rule(self, tool_name: str, params: Any) -> ApprovalRule | None:
        rules = [rule for rule in self.rules if rule.tool == tool_name]
        if not rules:
            return None
        arguments = dump(params) if params is not None else {}
        if not isinstance(arguments, Mapping):
            arguments = {}
        for rule in rules:
            if rule.matches(arguments):
                return rule
        return None

    def check(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> PolicyDecision:
        decision = context.approval
        if decision is not None and decision.policy_name not in (None, self.name):
            decision = None  # another policy's: it answers only that one
        rule = self.matching_rule(tool.name, params)
        if rule is None:
            return PolicyDecision.allow()
        if decision is not None:
            if decision.approved:
                return PolicyDecision.allow()
            return PolicyDecision.deny(decision.denial())
        condition = rule.describe()
        reason = f"Tool '{tool.name}' needs a human decision" + (
            f" when {condition}." if condition else "."
        )
        return PolicyDecision.ask(
            reason,
            approvers=self.approvers,
            deadline_seconds=self.deadline_seconds,
            four_eyes=self.four_eyes,
        )

    def on_result(
        self,
        tool: Tool[Any, Any],
        params: Any,
        result: ToolResult[Any],
        *,
        context: ToolContext,
    ) -> None:
        return None


__all__ = [
    "DECISION_STATUSES",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRule",
    "Decisions",
    "decision_under",
    "decisions_on",
    "expiry_reason",
    "format_duration",
    "mismatch_reason",
]
