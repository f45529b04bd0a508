"""Calls the model addresses to provider tools but the product executes.

Two kinds of output items are not run by the provider: ``apply_patch_call``
(the product applies the patch to the session's files) and a ``shell_call``
whose environment is ``local`` (the product runs its commands through the
executor the operator named). Each becomes a ``FunctionCall`` of a local tool
named like the hosted tool, run by a ``ToolExecutor`` like any function call:
under the prompt's policies for that tool name (plus the executor's
``CommandPolicy`` for a shell), inside the call's rollback, recorded as a
``ToolInvoked`` whose ``kind`` is the hosted kind. The answer goes back as
``apply_patch_call_output`` or ``shell_call_output``.

A resumed run replays the recorded text: a patch's status is read back from
it (``PatchApplied.render`` is the only text a successful patch produces) and
a shell call's entries are the JSON the model received.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

from ...events import EventSink, ToolInvoked
from ...execution.calls import FunctionCall
from ...execution.executor import ToolExecutor
from ...hosted.apply_patch import patch_tool
from ...hosted.base import HostedTool
from ...hosted.shell import ShellConfig
from ...local_shell import LocalShellExecutor, local_shell_tool
from ...policies import ToolPolicy
from ...prompt import RenderedPrompt
from ...tools import Tool
from .codecs.base import field
from .send_failures import excerpt

PATCH_ITEM = "apply_patch_call"
SHELL_ITEM = "shell_call"
_PATCH_DONE = ("Created ", "Updated ", "Deleted ")
_REFUSED_EXIT = 126


class _KindSink:
    """Stamps the hosted kind on the ``ToolInvoked`` of a local call."""

    def __init__(self, inner: EventSink, kinds: Mapping[str, str]) -> None:
        self.inner = inner
        self.kinds = kinds

    def emit(self, event: Any) -> None:
        if isinstance(event, ToolInvoked) and event.name in self.kinds:
            event = dataclasses.replace(event, kind=self.kinds[event.name])
        self.inner.emit(event)


@dataclasses.dataclass(frozen=True, slots=True)
class _Pending:
    kind: str  # "apply_patch" or "shell"
    item: Any
    commands: tuple[str, ...] = ()
    max_output_length: int | None = None


class LocalCalls:
    """The run's product-executed provider calls."""

    def __init__(
        self,
        executor: ToolExecutor,
        rendered: RenderedPrompt,
        shell_executors: Mapping[str, LocalShellExecutor],
        call_ids: set[str],
        sequence: Iterator[int],
    ) -> None:
        self.call_ids = call_ids
        self.patch_tool: HostedTool[Any] | None = None
        self.shell_tool: HostedTool[Any] | None = None
        self.shell_problem: str | None = None
        # with a provider-run shell too, a call naming no environment may be
        # the provider's: it is never run on this server
        self.hosted_shell = any(
            hosted.kind == "shell"
            and isinstance(hosted.config, ShellConfig)
            and hosted.config.hosted
            for hosted in rendered.hosted_tools
        )
        tools: list[Tool[Any, Any]] = []
        policies: dict[str, tuple[ToolPolicy, ...]] = dict(rendered.policies_by_tool)
        kinds: dict[str, str] = {}
        for hosted in rendered.hosted_tools:
            if hosted.kind == "apply_patch" and self.patch_tool is None:
                self.patch_tool = hosted
                tools.append(patch_tool(hosted))
            elif (
                hosted.kind == "shell"
                and isinstance(hosted.config, ShellConfig)
                and hosted.config.environment == "local"
                and self.shell_tool is None
            ):
                self.shell_tool = hosted
                kinds[hosted.name] = hosted.kind
                name = hosted.config.executor or ""
                shell = shell_executors.get(name)
                if shell is None:
                    self.shell_problem = (
                        f"No local shell executor named '{excerpt(name, 80)}' is "
                        "registered on this server; no command was run."
                    )
                    continue
                tools.append(local_shell_tool(hosted.name, hosted.description, shell))
                policies[hosted.name] = (
                    *executor.prompt.policies_for_tool(hosted.name),
                    shell.policy,
                )
                continue
            else:
                continue
            kinds[hosted.name] = hosted.kind
            policies[hosted.name] = executor.prompt.policies_for_tool(hosted.name)
        self._pending: dict[int, tuple[FunctionCall, _Pending]] = {}
        self._setup = (executor, rendered, tools, policies, kinds, sequence)

    @functools.cached_property
    def executor(self) -> ToolExecutor:
        """The run's executor with the local tools added, built at the first
        local call (most runs have none)."""
        executor, rendered, tools, policies, kinds, sequence = self._setup
        local = dataclasses.replace(
            rendered, tools=(*rendered.tools, *tools), policies_by_tool=policies
        )
        return ToolExecutor(
            prompt=executor.prompt,
            rendered=local,
            session=executor.session,
            sink=_KindSink(executor.sink, kinds),
            adapter=executor.adapter,
            adapter_name=executor.adapter_name,
            deadline=executor.deadline,
            budget_tracker=executor.budget_tracker,
            heartbeat=executor.heartbeat,
            sequence=sequence,
            run_id=executor.run_id,
            approvals=executor.approvals,
            answers=executor.answers,
        )

    def claims(self, item: Any) -> bool:
        """Whether the product runs ``item`` (and must answer it)."""
        item_type = field(item, "type")
        if item_type == PATCH_ITEM:
            return True
        if item_type != SHELL_ITEM:
            return False
        environment = field(item, "environment")
        kind = field(environment, "type") if isinstance(environment, Mapping) else None
        return kind == "local" or (
            kind is None and self.shell_tool is not None and not self.hosted_shell
        )

    def call(self, item: Any, turn: int) -> FunctionCall:
        """The item as a call of the local tool; a malformed item carries the
        problem, which the executor records as the call's failure."""
        call_id = field(item, "call_id")
        problem: str | None = None
        if not isinstance(call_id, str) or not call_id:
            problem = f"The {field(item, 'type')} has no call_id; it was not run."
            call_id = None
        elif call_id in self.call_ids:
            problem = (
                f"The call_id '{excerpt(call_id, 100)}' was already used by an "
                "earlier call of this run; this call was not run."
            )
        else:
            self.call_ids.add(call_id)
        if field(item, "type") == PATCH_ITEM:
            name, arguments, pending, missing = self._patch(item)
        else:
            name, arguments, pending, missing = self._shell(item)
        call = FunctionCall(
            name=name,
            arguments=arguments,
            call_id=call_id,
            turn=turn,
            problem=problem or missing,
        )
        # the call is held with its item, so its id() is not reused meanwhile
        self._pending[id(call)] = (call, pending)
        return call

    def _patch(self, item: Any) -> tuple[str, str, _Pending, str | None]:
        operation = field(item, "operation")
        missing = None
        if self.patch_tool is None:
            missing = "This prompt has no apply_patch tool; the patch was not applied."
        name = self.patch_tool.name if self.patch_tool is not None else "apply_patch"
        if isinstance(operation, Mapping):
            arguments = json.dumps(
                {
                    key: operation[key]
                    for key in ("type", "path", "diff")
                    if operation.get(key) is not None
                },
                ensure_ascii=False,
            )
        else:
            arguments = json.dumps(operation, ensure_ascii=False, default=str)
            missing = missing or "The apply_patch_call has no operation object."
        return name, arguments, _Pending("apply_patch", item), missing

    def _shell(self, item: Any) -> tuple[str, str, _Pending, str | None]:
        action = field(item, "action", {})
        action = action if isinstance(action, Mapping) else {}
        raw = field(action, "commands", [])
        commands = (
            tuple(c if isinstance(c, str) else json.dumps(c, default=str) for c in raw)
            if isinstance(raw, list | tuple)
            else ()
        )
        limit = field(action, "max_output_length")
        limit = (
            limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        )
        payload = {
            key: action[key]
            for key in ("commands", "timeout_ms", "max_output_length")
            if action.get(key) is not None
        }
        missing = None
        if self.shell_tool is None:
            missing = "This prompt has no local shell tool; no command was run."
        elif self.shell_problem is not None:
            missing = self.shell_problem
        name = self.shell_tool.name if self.shell_tool is not None else "shell"
        pending = _Pending("shell", item, commands, limit)
        return name, json.dumps(payload, ensure_ascii=False), pending, missing

    def owns(self, call: FunctionCall) -> bool:
        held = self._pending.get(id(call))
        return held is not None and held[0] is call

    def execute(self, call: FunctionCall) -> tuple[str, bool]:
        execution = self.executor.execute(call)
        return execution.output, execution.result.success

    def answer(
        self, call: FunctionCall, output: str, success: bool | None = None
    ) -> dict[str, Any]:
        """The input item that answers ``call`` (``success`` is ``None`` when
        ``output`` is replayed from a record)."""
        _held, pending = self._pending[id(call)]
        if pending.kind == "apply_patch":
            done = output.startswith(_PATCH_DONE) if success is None else success
            return {
                "type": "apply_patch_call_output",
                "call_id": call.call_id,
                "status": "completed" if done else "failed",
                "output": output,
            }
        entries = _entries(output, pending.commands)
        answer: dict[str, Any] = {
            "type": "shell_call_output",
            "call_id": call.call_id,
            "output": entries,
        }
        if pending.max_output_length is not None:
            answer["max_output_length"] = pending.max_output_length
        return answer


def _entries(output: str, commands: tuple[str, ...]) -> list[dict[str, Any]]:
    """The ``shell_call_output`` entries: the JSON a run produced, or, for a
    call that did not run (denied, malformed), one refusal per command."""
    try:
        decoded = json.loads(output)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply
        decoded = None
    if isinstance(decoded, list) and all(
        isinstance(entry, dict) and "outcome" in entry for entry in decoded
    ):
        return decoded
    refusal = {
        "stdout": "",
        "stderr": output,
        "outcome": {"type": "exit", "exit_code": _REFUSED_EXIT},
    }
    return [dict(refusal) for _ in commands or ("",)]


__all__ = ["LocalCalls"]
