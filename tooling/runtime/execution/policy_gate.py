"""The policies' say over one function call.

``check_policies`` asks every policy of the tool: the first denial denies the
call; otherwise the first policy that *asks* pauses the run
(``ApprovalPending``). ``policies_before_run`` calls the policies' optional
``before_run`` hooks just before the handler; ``policies_on_result`` hands a
successful result to each policy's ``on_result``. A policy that raises fails
closed: a denial, or a failed call, never an aborted run (``RunAborted``
excepted).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, NoReturn

from ..approvals import ApprovalDecision, decision_under
from ..context import ToolContext
from ..errors import ApprovalPending, RunAborted
from ..policies import PolicyDecision, ToolPolicy
from ..results import ToolResult
from ..tools import Tool
from .recording import CallRecorder

logger = logging.getLogger(__name__)


def check_policies(
    tool: Tool[Any, Any],
    params: Any,
    policies: tuple[ToolPolicy, ...],
    context: ToolContext,
    recorder: CallRecorder,
    decided: tuple[ApprovalDecision, ...] = (),
) -> str | None:
    """The first denial's reason, or ``None`` when every policy allows;
    raises ``ApprovalPending`` when none denies and one asks (the first
    that asks). Each policy sees only the human decision made under it
    (``decided``: the call's decisions)."""
    asking: tuple[ToolPolicy, PolicyDecision] | None = None
    for policy in policies:
        own = decision_under(decided, policy.name)
        checked = context if own is None else dataclasses.replace(context, approval=own)
        try:
            decision = policy.check(tool, params, context=checked)
        except RunAborted:
            raise
        except Exception as error:  # fail closed
            logger.exception(
                "Policy %s raised while checking %s", policy.name, tool.name
            )
            decision = PolicyDecision.deny(
                f"Policy '{policy.name}' could not decide: {error}"
            )
        if decision.outcome == "ask":
            asking = asking or (policy, decision)
            continue
        if not decision.allowed:
            reason = decision.reason or f"Policy '{policy.name}' denied the call."
            return recorder.denied(policy, tool, params, reason)
    if asking is not None:
        _pause(tool, params, recorder, *asking)
    return None


def _pause(
    tool: Tool[Any, Any],
    params: Any,
    recorder: CallRecorder,
    policy: ToolPolicy,
    decision: PolicyDecision,
) -> NoReturn:
    reason = decision.reason or f"Policy '{policy.name}' asks for a decision."
    request = recorder.approval_requested(tool, params, policy, decision, reason)
    raise ApprovalPending(reason, request=request)


def policies_before_run(
    tool: Tool[Any, Any],
    params: Any,
    policies: tuple[ToolPolicy, ...],
    context: ToolContext,
    recorder: CallRecorder,
) -> str | None:
    """Call each policy's optional ``before_run(tool, params, *, context)``
    once every policy allowed the call, just before its handler runs.

    It runs outside the handler's transaction: what it saves stays whether
    the handler succeeds or fails (``CallLimitPolicy`` counts calls that
    ran this way; ``on_result`` only sees successes). One that raises
    denies the call, fail-closed, and its siblings' saves roll back; the
    denial is recorded after that rollback, which would drop it too.
    """
    hooks = [
        (policy, hook)
        for policy in policies
        if (hook := getattr(policy, "before_run", None)) is not None
    ]
    if not hooks:
        return None
    failed: tuple[ToolPolicy, Exception] | None = None
    with context.session.transaction() as transaction:
        for policy, hook in hooks:
            try:
                hook(tool, params, context=context)
            except RunAborted:
                raise
            except Exception as error:
                logger.exception("Policy %s raised in before_run", policy.name)
                transaction.rollback()
                failed = (policy, error)
                break
    if failed is None:
        return None
    reason = f"Policy '{failed[0].name}' could not record the call: {failed[1]}"
    return recorder.denied(failed[0], tool, params, reason)


def policies_on_result(
    tool: Tool[Any, Any],
    params: Any,
    result: ToolResult[Any],
    policies: tuple[ToolPolicy, ...],
    context: ToolContext,
) -> ToolResult[Any]:
    """``result``, once each policy's ``on_result`` saw it; the failure the
    call becomes instead when one raises."""
    for policy in policies:
        try:
            policy.on_result(tool, params, result, context=context)
        except RunAborted:
            raise
        except Exception as error:  # the call fails rather than the run
            logger.exception("Policy %s raised in on_result", policy.name)
            return ToolResult.error(
                f"Policy '{policy.name}' could not record the result: {error}"
            )
    return result
