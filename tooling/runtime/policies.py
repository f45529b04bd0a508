"""Tool policies: rules checked before a tool runs.

Every policy of a tool must allow the call (composition is "all must allow"):
any denial denies; otherwise any *ask* pauses the run until a human decides
(``approvals.py``).
Policies fail closed: one that cannot decide denies with a reason, and the
executor turns a policy that raises into a denial too. Each policy keeps its
own ``PolicyState`` in the session (one slice per policy name), written
inside the tool's transaction so a failed call leaves it untouched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .errors import PromptValidationError
from .patches import PatchOperation
from .session import Filesystem

if TYPE_CHECKING:
    from .context import ToolContext
    from .results import ToolResult
    from .tools import Tool


PolicyOutcome = Literal["allow", "deny", "ask"]


@dataclasses.dataclass(frozen=True, slots=True)
class PolicyDecision:
    """A policy's verdict on one call: *allow*, *deny* or *ask* (a human must
    decide first).

    An *ask* is ``allowed=False``: code that reads only ``allowed`` treats it
    as a denial (fail closed). The executor reads ``outcome`` and pauses the
    run instead; ``approvers`` (``{"permission": ..., "group": ...}``) and
    ``deadline_seconds`` say who may decide and how long they have;
    ``four_eyes`` whether the run's author is kept from deciding (``None``:
    the host's default).
    """

    allowed: bool
    reason: str | None = None
    asks: bool = False
    approvers: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: MappingProxyType({})
    )
    deadline_seconds: int | None = None
    four_eyes: bool | None = None

    @classmethod
    def allow(cls) -> PolicyDecision:
        return cls(allowed=True)

    @classmethod
    def deny(cls, reason: str) -> PolicyDecision:
        return cls(allowed=False, reason=reason)

    @classmethod
    def ask(
        cls,
        reason: str,
        *,
        approvers: Mapping[str, str] | None = None,
        deadline_seconds: int | None = None,
        four_eyes: bool | None = None,
    ) -> PolicyDecision:
        return cls(
            allowed=False,
            reason=reason,
            asks=True,
            approvers=MappingProxyType(dict(approvers or {})),
            deadline_seconds=deadline_seconds,
            four_eyes=four_eyes,
        )

    @property
    def outcome(self) -> PolicyOutcome:
        if self.allowed:
            return "allow"
        return "ask" if self.asks else "deny"


@dataclasses.dataclass(frozen=True, slots=True)
class PolicyState:
    """What one policy remembers about a session."""

    policy_name: str
    invoked_tools: frozenset[str] = frozenset()
    invoked_keys: frozenset[tuple[str, str]] = frozenset()


@runtime_checkable
class ToolPolicy(Protocol):
    """Decides on each function call (``check``) and learns each success
    (``on_result``, inside the call's transaction). A policy may also define
    ``before_run(tool, params, *, context)``, called once every policy allowed
    the call, just before its handler and outside its transaction, so what it
    saves stays even when the handler fails (``CallLimitPolicy`` counts calls
    this way; see ``execution.policy_gate.policies_before_run``)."""

    @property
    def name(self) -> str: ...

    def check(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> PolicyDecision: ...

    def on_result(
        self,
        tool: Tool[Any, Any],
        params: Any,
        result: ToolResult[Any],
        *,
        context: ToolContext,
    ) -> None: ...


def state_key(policy_name: str) -> str:
    return f"policy:{policy_name}"


def load_state(policy_name: str, context: ToolContext) -> PolicyState:
    state = context.session.get_state(state_key(policy_name))
    return state if isinstance(state, PolicyState) else PolicyState(policy_name)


def save_state(state: PolicyState, context: ToolContext) -> None:
    context.session.put_state(state_key(state.policy_name), state)


class SequentialDependencyPolicy:
    """Tool B may run only after each of its prerequisites succeeded."""

    def __init__(
        self,
        dependencies: Mapping[str, Iterable[str]],
        *,
        name: str = "sequential_dependency",
    ) -> None:
        self._name = name
        self.dependencies: dict[str, frozenset[str]] = {}
        for tool_name, required in dependencies.items():
            needed = frozenset(required)
            if tool_name in needed:
                raise PromptValidationError(
                    f"Tool '{tool_name}' cannot depend on itself."
                )
            self.dependencies[tool_name] = needed
        self._check_cycles()

    def _check_cycles(self) -> None:
        visiting: set[str] = set()
        done: set[str] = set()

        def visit(tool_name: str, trail: tuple[str, ...]) -> None:
            if tool_name in done:
                return
            if tool_name in visiting:
                cycle = " -> ".join((*trail, tool_name))
                raise PromptValidationError(f"Dependency cycle: {cycle}.")
            visiting.add(tool_name)
            for required in sorted(self.dependencies.get(tool_name, ())):
                visit(required, (*trail, tool_name))
            visiting.discard(tool_name)
            done.add(tool_name)

        for tool_name in sorted(self.dependencies):
            visit(tool_name, ())

    @property
    def name(self) -> str:
        return self._name

    def referenced_tools(self) -> frozenset[str]:
        names = set(self.dependencies)
        for required in self.dependencies.values():
            names |= required
        return frozenset(names)

    def check(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> PolicyDecision:
        required = self.dependencies.get(tool.name)
        if not required:
            return PolicyDecision.allow()
        missing = required - load_state(self.name, context).invoked_tools
        if missing:
            return PolicyDecision.deny(
                f"Tool '{tool.name}' requires: {', '.join(sorted(missing))}"
            )
        return PolicyDecision.allow()

    def on_result(
        self,
        tool: Tool[Any, Any],
        params: Any,
        result: ToolResult[Any],
        *,
        context: ToolContext,
    ) -> None:
        if not result.success:
            return
        state = load_state(self.name, context)
        if tool.name not in state.invoked_tools:
            save_state(
                dataclasses.replace(
                    state, invoked_tools=state.invoked_tools | {tool.name}
                ),
                context,
            )


def _path_of(params: Any) -> str | None:
    for attribute in ("path", "file_path"):
        value = getattr(params, attribute, None)
        if isinstance(value, str):
            return value
    return None


DEFAULT_READ_TOOLS = ("read_file",)
DEFAULT_WRITE_TOOLS = ("write_file", "edit_file")


class ReadBeforeWritePolicy:
    """An existing file must be read before a write tool may overwrite it.

    Every ``apply_patch`` operation counts as a write of its path, whatever
    the tool's name. Creating a new file is always allowed. Without a
    filesystem, or for a write call that names no path, the policy cannot
    decide and denies.
    """

    def __init__(
        self,
        *,
        read_tools: Iterable[str] | None = None,
        write_tools: Iterable[str] | None = None,
        mount_point: str | None = None,
        name: str = "read_before_write",
    ) -> None:
        self._name = name
        # Names given explicitly must all be tools of the prompt; the defaults
        # (as seed 003 writes ``ReadBeforeWritePolicy()``) cover whichever of
        # them the prompt has.
        self._explicit = read_tools is not None or write_tools is not None
        self.read_tools = frozenset(
            DEFAULT_READ_TOOLS if read_tools is None else read_tools
        )
        self.write_tools = frozenset(
            DEFAULT_WRITE_TOOLS if write_tools is None else write_tools
        )
        if not self.read_tools or not self.write_tools:
            raise PromptValidationError(
                "ReadBeforeWritePolicy needs at least one read tool and one write tool."
            )
        overlap = self.read_tools & self.write_tools
        if overlap:
            raise PromptValidationError(
                "Tools cannot be both read and write tools: "
                f"{', '.join(sorted(overlap))}."
            )
        self.mount_point = (mount_point or "").strip("/")

    @property
    def name(self) -> str:
        return self._name

    def referenced_tools(self) -> frozenset[str]:
        if not self._explicit:
            return frozenset()
        return self.read_tools | self.write_tools

    def normalise(self, path: str) -> str:
        value = path.strip().lstrip("/")
        if self.mount_point:
            if value == self.mount_point:
                return ""
            if value.startswith(self.mount_point + "/"):
                return value[len(self.mount_point) + 1 :]
        return value

    def check(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> PolicyDecision:
        # every apply_patch operation writes (or deletes) its path
        if tool.name not in self.write_tools and not isinstance(params, PatchOperation):
            return PolicyDecision.allow()
        raw = _path_of(params)
        if raw is None:
            return PolicyDecision.deny(
                f"Policy '{self.name}' cannot decide: tool '{tool.name}' names no path."
            )
        filesystem = context.resources.get(Filesystem)  # type: ignore[type-abstract]
        if filesystem is None:
            return PolicyDecision.deny(
                f"Policy '{self.name}' cannot decide: no filesystem is available."
            )
        path = self.normalise(raw)
        if not filesystem.exists(path):
            return PolicyDecision.allow()
        keys = load_state(self.name, context).invoked_keys
        if any((read, path) in keys for read in self.read_tools):
            return PolicyDecision.allow()
        return PolicyDecision.deny(f"File '{raw}' must be read before overwriting.")

    def on_result(
        self,
        tool: Tool[Any, Any],
        params: Any,
        result: ToolResult[Any],
        *,
        context: ToolContext,
    ) -> None:
        if not result.success or tool.name not in self.read_tools:
            return
        raw = _path_of(params)
        if raw is None:
            return
        state = load_state(self.name, context)
        key = (tool.name, self.normalise(raw))
        if key not in state.invoked_keys:
            save_state(
                dataclasses.replace(state, invoked_keys=state.invoked_keys | {key}),
                context,
            )
