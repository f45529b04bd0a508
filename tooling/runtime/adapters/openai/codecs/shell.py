"""OpenAI Responses codec for ``shell``.

A hosted shell answers in two items: ``shell_call`` (the commands) and
``shell_call_output`` (one stdout, stderr and outcome per command), tied by
``call_id``. The call is recorded once, at its ``shell_call``, with the output
found among the same response's items; an output whose call is missing is
recorded on its own so nothing the provider ran is lost.

A ``shell_call`` that names no environment and comes without its output is a
call the provider hands to the client (a local shell's). A hosted shell's
prompt never runs it here: it is recorded as a failed call saying why, and
the model is answered with that reason (``NativeCall.answer``), so the audit
shows nothing ran and the run can go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ....hosted.base import HostedTool
from ....hosted.shell import (
    Outcome,
    ShellCall,
    ShellCommandRun,
    ShellConfig,
    ShellResult,
)
from ..send_failures import excerpt
from .base import NativeCall, field, status_ok


def _config(tool: HostedTool[Any]) -> ShellConfig:
    config = tool.config
    if not isinstance(config, ShellConfig):
        raise TypeError(
            f"Hosted tool '{tool.name}' of kind 'shell' needs a ShellConfig, "
            f"not {type(config).__name__}."
        )
    return config


def environment_payload(config: ShellConfig) -> dict[str, Any]:
    """The tool's ``environment`` object (the local executor stays server-side)."""
    if config.environment == "container_reference":
        return {"type": "container_reference", "container_id": config.container_id}
    if config.environment == "local":
        return {"type": "local"}
    policy: dict[str, Any] = {"type": config.network_policy}
    if config.network_policy == "allowlist":
        policy["allowed_domains"] = list(config.allowed_domains)
    environment: dict[str, Any] = {"type": "container_auto", "network_policy": policy}
    if config.memory_limit is not None:
        environment["memory_limit"] = config.memory_limit
    if config.file_ids:
        environment["file_ids"] = list(config.file_ids)
    return environment


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _outcome(value: Any) -> Outcome | None:
    kind = field(value, "type")
    if kind == "timeout":
        return "timeout"
    if kind == "exit":
        code = _int_or_none(field(value, "exit_code"))
        if code is None:
            raise ValueError(f"exit outcome without an integer exit_code: {value!r}")
        return code
    return None


def _outputs(item: Any) -> list[Any]:
    outputs = field(item, "output", [])
    if not isinstance(outputs, list | tuple):
        raise ValueError("shell_call_output.output must be a list")
    return list(outputs)


def shell_call(call: Any, output: Any | None = None) -> ShellCall:
    """A ``shell_call`` item with its ``shell_call_output`` (if any) paired in
    order: the n-th output belongs to the n-th command."""
    action = field(call, "action", {})
    commands = field(action, "commands", [])
    if not isinstance(commands, list | tuple):
        raise ValueError("shell_call.action.commands must be a list")
    results = _outputs(output) if output is not None else []
    runs: list[ShellCommandRun] = []
    for position in range(max(len(commands), len(results))):
        command = _text(commands[position]) if position < len(commands) else ""
        if position < len(results):
            entry = results[position]
            runs.append(
                ShellCommandRun(
                    command=command,
                    stdout=_text(field(entry, "stdout", "")),
                    stderr=_text(field(entry, "stderr", "")),
                    outcome=_outcome(field(entry, "outcome")),
                )
            )
        else:
            runs.append(ShellCommandRun(command=command))
    environment = field(call, "environment", {})
    status = field(output, "status") if output is not None else None
    return ShellCall(
        call_id=_text(field(call, "call_id") or field(call, "id")),
        commands=tuple(runs),
        status=_text(status or field(call, "status", "completed")),
        environment=_text(field(environment, "type", "container_auto")),
        container_id=_text(field(environment, "container_id")) or None,
        timeout_ms=_int_or_none(field(action, "timeout_ms")),
        max_output_length=_int_or_none(field(action, "max_output_length")),
    )


def orphan_output(output: Any) -> ShellCall:
    """A ``shell_call_output`` whose ``shell_call`` is not in the response."""
    return shell_call(
        {"call_id": field(output, "call_id"), "action": {"commands": []}}, output
    )


def _output_for(call_id: Any, items: Sequence[Any]) -> Any | None:
    for item in items:
        if (
            field(item, "type") == "shell_call_output"
            and field(item, "call_id") == call_id
        ):
            return item
    return None


def _has_call(call_id: Any, items: Sequence[Any]) -> bool:
    return any(
        field(item, "type") == "shell_call" and field(item, "call_id") == call_id
        for item in items
    )


NOT_RUN = (
    "The model asked for a client-executed shell call, but this prompt's shell "
    "runs in a provider container; nothing ran."
)
# "cannot execute": the wire has no "refused" outcome (ADR 0012)
_NOT_RUN_EXIT = 126


def _client_call(item: Any, items: Sequence[Any]) -> bool:
    """Whether ``item`` is a ``shell_call`` the provider left to the client:
    it names no environment and no ``shell_call_output`` came with it."""
    environment = field(item, "environment")
    named = isinstance(environment, Mapping) and field(environment, "type")
    return not named and _output_for(field(item, "call_id"), items) is None


def _not_run(call: ShellCall, item: Any) -> NativeCall:
    """A client call the product did not run (this prompt's shell is
    hosted): recorded as failed, and answered with the reason per command so
    the model can go on."""
    params: dict[str, Any] = {
        "commands": [run.command for run in call.commands],
        "environment": None,
    }
    answer: dict[str, Any] | None = None
    call_id = field(item, "call_id")
    if isinstance(call_id, str) and call_id:
        refusal = {
            "stdout": "",
            "stderr": NOT_RUN,
            "outcome": {"type": "exit", "exit_code": _NOT_RUN_EXIT},
        }
        answer = {
            "type": "shell_call_output",
            "call_id": call_id,
            "output": [dict(refusal) for _ in call.commands or (None,)],
        }
        if call.max_output_length is not None:
            answer["max_output_length"] = call.max_output_length
    return NativeCall(
        call.call_id, params, call, False, NOT_RUN, NOT_RUN, answer=answer
    )


def _native(call: ShellCall) -> NativeCall:
    timed_out = sum(run.timed_out for run in call.commands)
    where = call.container_id or call.environment
    summary = f"shell ({call.status}) in {where}: {len(call.commands)} command(s)" + (
        f", {timed_out} timed out" if timed_out else ""
    )
    failed = [
        run for run in call.commands if run.timed_out or (run.exit_code or 0) != 0
    ]
    success = status_ok(call.status)
    if success:
        message = summary
    else:
        message = f"Shell call {call.call_id} {call.status} in {where}."
    if failed:
        message += (
            " ("
            + "; ".join(
                f"{excerpt(run.command, 100) or '?'}: {run.outcome_label}"
                for run in failed[:5]
            )
            + ")"
        )
    params: dict[str, Any] = {
        "commands": [run.command for run in call.commands],
        "environment": call.environment,
    }
    if call.container_id:
        params["container_id"] = call.container_id
    if call.timeout_ms is not None:
        params["timeout_ms"] = call.timeout_ms
    if call.max_output_length is not None:
        params["max_output_length"] = call.max_output_length
    rendered = ShellResult(calls=(call,)).render()
    return NativeCall(call.call_id, params, call, success, message, rendered)


class OpenAIShellCodec:
    """``shell``: a provider container (auto or referenced) or a local executor."""

    kind = "shell"
    item_types = ("shell_call", "shell_call_output")
    include: tuple[str, ...] = ()

    def serialize(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "shell", "environment": environment_payload(_config(tool))}

    def tool_choice(self, tool: HostedTool[Any]) -> dict[str, Any]:
        return {"type": "shell"}

    def matches(self, item: Any, tool: HostedTool[Any]) -> bool:
        config = tool.config
        if not isinstance(config, ShellConfig):
            return False
        environment = field(item, "environment")
        kind = field(environment, "type") if isinstance(environment, Mapping) else None
        if kind == "local":
            return config.environment == "local"
        if kind == "container_reference" and config.container_id is not None:
            return bool(field(environment, "container_id") == config.container_id)
        return config.hosted

    def parse_call(self, item: Any) -> NativeCall | None:
        """One item read alone: a call without its output, or an output."""
        return self.parse_call_in(item, (item,))

    def parse_call_in(self, item: Any, items: Sequence[Any]) -> NativeCall | None:
        """One item among its response's ``items``: a ``shell_call`` is
        recorded with its paired output; an output is recorded only when its
        call is not there."""
        call_id = field(item, "call_id")
        if field(item, "type") == "shell_call_output":
            if _has_call(call_id, items):
                return None
            return _native(orphan_output(item))
        if _client_call(item, items):
            return _not_run(shell_call(item), item)
        return _native(shell_call(item, _output_for(call_id, items)))

    def parse_output(
        self, response_items: Sequence[Any], tool: HostedTool[Any]
    ) -> ShellResult | None:
        calls = [
            shell_call(item, _output_for(field(item, "call_id"), response_items))
            for item in response_items
            if field(item, "type") == "shell_call" and self.matches(item, tool)
        ]
        if not calls:
            return None
        return ShellResult(calls=tuple(calls))
