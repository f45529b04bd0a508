"""Shell: configuration, typed output, factory and section.

The model writes shell commands; where they run is the tool's environment:

- ``container_auto``: the provider creates a container for the request
  (optionally sized, seeded with files, and with outbound network access
  limited to an allow-list of domains; none by default);
- ``container_reference``: an existing container named by id;
- ``local``: the product runs the commands itself, through an executor the
  operator chose by name (see ``tooling.runtime.local_shell``). Nothing runs on
  the host unless such an executor is named.

With a hosted environment the provider returns ``shell_call`` and
``shell_call_output`` items; each command comes back with its stdout, stderr
and outcome (an exit code, or a timeout).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

from ..errors import PromptValidationError
from .base import HostedTool, frozen_tuple
from .code_interpreter import MEMORY_LIMITS, MemoryLimit
from .section import HostedToolSection
from .spec import HostedKindSpec, HostedOption
from .web_search import MAX_ALLOWED_DOMAINS, validate_domain

ShellEnvironment = Literal["container_auto", "container_reference", "local"]
ENVIRONMENTS: tuple[str, ...] = ("container_auto", "container_reference", "local")
NetworkPolicy = Literal["disabled", "allowlist"]
NETWORK_POLICIES: tuple[str, ...] = ("disabled", "allowlist")
HOSTED_ENVIRONMENTS: tuple[str, ...] = ("container_auto", "container_reference")
MAX_NAME_LENGTH = 200

Outcome = int | Literal["timeout"]


def _name(value: object, *, field: str, what: str) -> str:
    """A non-blank, printable, single-line identifier (container id, executor)."""
    if not isinstance(value, str) or not value.strip():
        raise PromptValidationError(
            f"{field} must be a non-blank {what}.", placeholder=field
        )
    text = value.strip()
    if len(text) > MAX_NAME_LENGTH or not text.isprintable():
        raise PromptValidationError(
            f"{field} must be a printable {what} of at most {MAX_NAME_LENGTH} "
            "characters.",
            placeholder=field,
        )
    return text


@dataclasses.dataclass(frozen=True, slots=True)
class ShellConfig:
    """Options of the shell tool.

    Each environment takes its own options and refuses the others':
    ``network_policy``, ``allowed_domains``, ``memory_limit`` and ``file_ids``
    describe a ``container_auto`` container; ``container_id`` names the
    container of ``container_reference``; ``executor`` names the registered
    local executor of ``local`` (required there, since no default runs host
    commands). ``allowlist`` needs at least one domain; ``disabled`` takes none.
    """

    environment: ShellEnvironment = "container_auto"
    network_policy: NetworkPolicy = "disabled"
    allowed_domains: tuple[str, ...] = ()
    memory_limit: MemoryLimit | None = None
    file_ids: tuple[str, ...] = ()
    container_id: str | None = None
    executor: str | None = None

    def __post_init__(self) -> None:
        if self.environment not in ENVIRONMENTS:
            raise PromptValidationError(
                f"environment {self.environment!r} is not one of "
                f"{', '.join(ENVIRONMENTS)}.",
                placeholder="environment",
            )
        if self.network_policy not in NETWORK_POLICIES:
            raise PromptValidationError(
                f"network_policy {self.network_policy!r} is not one of "
                f"{', '.join(NETWORK_POLICIES)}.",
                placeholder="network_policy",
            )
        if self.memory_limit is not None and self.memory_limit not in MEMORY_LIMITS:
            raise PromptValidationError(
                f"memory_limit {self.memory_limit!r} is not one of "
                f"{', '.join(MEMORY_LIMITS)}.",
                placeholder="memory_limit",
            )
        object.__setattr__(self, "allowed_domains", self._domains())
        object.__setattr__(self, "file_ids", self._file_ids())
        if self.container_id is not None:
            object.__setattr__(
                self,
                "container_id",
                _name(self.container_id, field="container_id", what="container id"),
            )
        if self.executor is not None:
            object.__setattr__(
                self,
                "executor",
                _name(self.executor, field="executor", what="executor name"),
            )
        self._check_environment()

    def _domains(self) -> tuple[str, ...]:
        if self.allowed_domains is None or isinstance(self.allowed_domains, Mapping):
            raise PromptValidationError(
                "allowed_domains must be a list of domain names.",
                placeholder="allowed_domains",
            )
        domains: list[str] = []
        for value in frozen_tuple(self.allowed_domains):
            if not isinstance(value, str):
                raise PromptValidationError(
                    f"allowed_domains must be domain names (got {value!r}).",
                    placeholder="allowed_domains",
                )
            domain = validate_domain(value)
            if domain not in domains:
                domains.append(domain)
        if len(domains) > MAX_ALLOWED_DOMAINS:
            raise PromptValidationError(
                f"A network allow-list takes at most {MAX_ALLOWED_DOMAINS} domains "
                f"(got {len(domains)}).",
                placeholder="allowed_domains",
            )
        if self.network_policy == "allowlist" and not domains:
            raise PromptValidationError(
                "network_policy 'allowlist' needs at least one allowed domain "
                "(or use 'disabled' for no network access).",
                placeholder="allowed_domains",
            )
        if self.network_policy == "disabled" and domains:
            raise PromptValidationError(
                "allowed_domains only apply with network_policy 'allowlist'; "
                "'disabled' allows no network access.",
                placeholder="allowed_domains",
            )
        return tuple(domains)

    def _file_ids(self) -> tuple[str, ...]:
        if self.file_ids is None or isinstance(self.file_ids, Mapping):
            raise PromptValidationError(
                "file_ids must be a list of file ids.", placeholder="file_ids"
            )
        ids: list[str] = []
        for value in frozen_tuple(self.file_ids):
            text = _name(value, field="file_ids", what="file id")
            if text not in ids:
                ids.append(text)
        return tuple(ids)

    def _check_environment(self) -> None:
        given = {
            "network_policy": self.network_policy != "disabled",
            "allowed_domains": bool(self.allowed_domains),
            "memory_limit": self.memory_limit is not None,
            "file_ids": bool(self.file_ids),
            "container_id": self.container_id is not None,
            "executor": self.executor is not None,
        }
        allowed = {
            "container_auto": (
                "network_policy",
                "allowed_domains",
                "memory_limit",
                "file_ids",
            ),
            "container_reference": ("container_id",),
            "local": ("executor",),
        }[self.environment]
        refused = [
            name for name, present in given.items() if present and name not in allowed
        ]
        if refused:
            raise PromptValidationError(
                f"The {self.environment} environment does not take "
                f"{' or '.join(refused)}; "
                + {
                    "container_auto": "those options need another environment.",
                    "container_reference": "the referenced container already has its "
                    "size, files and network policy.",
                    "local": "a local executor runs on this server, not in a "
                    "provider container.",
                }[self.environment],
                placeholder=refused[0],
            )
        if self.environment == "container_reference" and self.container_id is None:
            raise PromptValidationError(
                "The container_reference environment needs a container_id.",
                placeholder="container_id",
            )
        if self.environment == "local" and self.executor is None:
            raise PromptValidationError(
                "The local environment needs an executor: name one registered in "
                "the shell executor registry (nothing runs host commands by default).",
                placeholder="executor",
            )

    @property
    def hosted(self) -> bool:
        """Whether the provider runs the commands (not a local executor)."""
        return self.environment in HOSTED_ENVIRONMENTS


@dataclasses.dataclass(frozen=True, slots=True)
class ShellCommandRun:
    """One command of a shell call: what ran and what came back.

    ``outcome`` is the exit code, ``"timeout"`` when the command ran out of
    time, or ``None`` while no output has been reported for it.
    """

    command: str
    stdout: str = ""
    stderr: str = ""
    outcome: Outcome | None = None

    @property
    def timed_out(self) -> bool:
        return self.outcome == "timeout"

    @property
    def exit_code(self) -> int | None:
        return self.outcome if isinstance(self.outcome, int) else None

    @property
    def outcome_label(self) -> str:
        if self.outcome is None:
            return "no output"
        if self.timed_out:
            return "timed out"
        return f"exit {self.outcome}"


@dataclasses.dataclass(frozen=True, slots=True)
class ShellCall:
    """One ``shell_call`` with its output: the commands in the order run."""

    call_id: str
    commands: tuple[ShellCommandRun, ...] = ()
    status: str = "completed"
    environment: str = "container_auto"
    container_id: str | None = None
    timeout_ms: int | None = None
    max_output_length: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ShellResult:
    """Every shell call of a run."""

    calls: tuple[ShellCall, ...] = ()

    @property
    def commands(self) -> tuple[ShellCommandRun, ...]:
        return tuple(run for call in self.calls for run in call.commands)

    def render(self) -> str:
        lines: list[str] = []
        for call in self.calls:
            where = call.container_id or call.environment
            lines.append(f"[{call.status}] shell {call.call_id} ({where})")
            for run in call.commands:
                lines.append(f"$ {run.command}")
                if run.stdout:
                    lines.append(run.stdout.rstrip("\n"))
                if run.stderr:
                    lines.append(f"stderr: {run.stderr.rstrip(chr(10))}")
                lines.append(f"-> {run.outcome_label}")
        return "\n".join(lines)


SHELL_DESCRIPTION = (
    "Run shell commands in a sandboxed environment to inspect files, run "
    "programs and check results."
)


def shell_tool(
    config: ShellConfig | None = None,
    *,
    name: str = "shell",
    description: str = SHELL_DESCRIPTION,
) -> HostedTool[ShellConfig]:
    """A shell tool (a provider-created container with no network unless
    configured)."""
    if config is not None and not isinstance(config, ShellConfig):
        raise PromptValidationError(
            "shell_tool needs a ShellConfig.", placeholder="config"
        )
    return HostedTool(
        kind="shell",
        name=name,
        description=description,
        config=config or ShellConfig(),
    )


SHELL_TEMPLATE = """\
Use the shell tool to run commands instead of guessing their output. Each
command reports its stdout, stderr and exit code; a command that runs too long
is stopped. Quote the relevant output in the answer."""


class ShellSection(HostedToolSection[ShellConfig]):
    """A section that documents and exposes the shell tool."""

    default_key = "shell"
    default_title = "Shell"
    default_template = SHELL_TEMPLATE
    tool_factory = shell_tool


__all__ = [
    "ENVIRONMENTS",
    "NETWORK_POLICIES",
    "SHELL_DESCRIPTION",
    "NetworkPolicy",
    "Outcome",
    "ShellCall",
    "ShellCommandRun",
    "ShellConfig",
    "ShellEnvironment",
    "ShellResult",
    "ShellSection",
    "shell_tool",
]


# -- The catalog's view of this kind (``spec.HostedKindSpec``).

SHELL_SPEC: HostedKindSpec[ShellConfig] = HostedKindSpec(
    kind="shell",
    label="Shell",
    config_type=ShellConfig,
    tool_factory=shell_tool,
    description="Used when the kind is shell: where the model's commands run. A "
    "container_auto container has no network access unless allow-listed; a local "
    "shell runs only through the registered executor chosen here.",
    options=(
        HostedOption(
            "environment",
            "choice",
            choices=ENVIRONMENTS,
            blank=None,
            default="container_auto",
            help="container_auto: the provider creates a container (network, "
            "memory and files below); container_reference: the existing container "
            "named below; local: the commands run on this server, by the executor "
            "chosen below.",
        ),
        HostedOption(
            "network_policy",
            "choice",
            choices=NETWORK_POLICIES,
            blank=None,
            default="disabled",
            help="container_auto: disabled (no network access) or allowlist "
            "(only the allowed domains below).",
        ),
        HostedOption(
            "allowed_domains",
            "lines",
            help="container_auto with allowlist: one domain per line, without "
            "https:// (max 100).",
        ),
        HostedOption(
            "memory_limit", "choice", choices=MEMORY_LIMITS, help="container_auto only."
        ),
        HostedOption(
            "file_ids",
            "lines",
            help="container_auto: files to copy in, one id per line.",
        ),
        HostedOption(
            "container_id",
            max_length=200,
            help="container_reference: the id of an existing container.",
        ),
        HostedOption(
            "executor",
            "executor",
            label="Local executor",
            help="Shell, local environment: the registered executor that runs "
            "the commands (required there; nothing runs host commands otherwise).",
        ),
    ),
)
