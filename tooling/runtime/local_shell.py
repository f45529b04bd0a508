"""The local shell: commands the model asks for, run by an operator's executor.

With ``{"type":"shell","environment":{"type":"local"}}`` the provider does not
run anything: its ``shell_call`` items carry commands the product runs itself
and answers with ``shell_call_output``. Nothing here runs a host program on
its own: a ``LocalShellExecutor`` does, and only the one the operator named in
the tool's configuration. ``CommandPolicy`` decides each command first (allowed
programs, refused patterns), fail-closed.

``ScratchExecutor`` is the executor the product ships: it copies the session's
files into a fresh scratch directory, runs the program (an allow-listed name,
resolved to an absolute path; no shell, so no pipes, globs or redirections)
there with an empty environment, a timeout and an output cap, and writes the
files the command created or changed back to the session's filesystem (and
deletes those it removed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import (
    IO,
    TYPE_CHECKING,
    Final,
    Literal,
    Protocol,
    runtime_checkable,
)

# CommandPolicy and its parts are re-exported: they lived here first.
from .command_policy import UNSAFE_OPTIONS as UNSAFE_OPTIONS
from .command_policy import CommandDecision as CommandDecision
from .command_policy import CommandPolicy
from .errors import PromptValidationError, ToolValidationError
from .results import ToolResult
from .session import Filesystem
from .tools import Tool
from .vfs import normalise_path

if TYPE_CHECKING:
    from .context import ToolContext

DEFAULT_TIMEOUT_MS: Final = 10_000
MAX_TIMEOUT_MS: Final = 120_000
DEFAULT_OUTPUT_LIMIT: Final = 16_384
MAX_OUTPUT_LIMIT: Final = 65_536
MAX_COMMANDS: Final = 20
TRUNCATED: Final = "\n[output truncated]"


@dataclasses.dataclass(frozen=True, slots=True)
class CommandOutcome:
    """How one command ended: an exit code, a timeout, or refused by policy
    (the executor never ran it)."""

    kind: Literal["exit", "timeout", "denied"]
    exit_code: int | None = None

    @classmethod
    def exited(cls, code: int) -> CommandOutcome:
        return cls("exit", code)

    @classmethod
    def timed_out(cls) -> CommandOutcome:
        return cls("timeout")

    @classmethod
    def denied(cls) -> CommandOutcome:
        return cls("denied")

    def wire(self) -> dict[str, object]:
        """The ``outcome`` of a ``shell_call_output`` entry (a denied command is
        reported as exit code 126, "cannot execute", its reason in stderr)."""
        if self.kind == "timeout":
            return {"type": "timeout"}
        code = 126 if self.kind == "denied" else self.exit_code
        return {"type": "exit", "exit_code": code if code is not None else -1}

    def render(self) -> str:
        if self.kind == "exit":
            return f"exit {self.exit_code}"
        return self.kind


@dataclasses.dataclass(frozen=True, slots=True)
class CommandRun:
    """One command as run (or refused): its output and how it ended."""

    command: str
    stdout: str = ""
    stderr: str = ""
    outcome: CommandOutcome = dataclasses.field(
        default_factory=lambda: CommandOutcome.exited(0)
    )
    policy: str | None = None  # the policy that decided the command
    reason: str | None = None  # why it was refused (``None``: allowed)
    changed_files: tuple[str, ...] = ()
    deleted_files: tuple[str, ...] = ()

    def wire(self) -> dict[str, object]:
        stderr = self.stderr
        if self.outcome.kind == "denied" and self.reason:
            stderr = f"Command refused: {self.reason}"
        return {"stdout": self.stdout, "stderr": stderr, "outcome": self.outcome.wire()}

    def render(self) -> str:
        lines = [f"$ {self.command}", f"[{self.outcome.render()}]"]
        if self.reason:
            lines.append(f"refused: {self.reason}")
        if self.stdout:
            lines.append(self.stdout.rstrip("\n"))
        if self.stderr:
            lines.append(f"stderr: {self.stderr.rstrip(chr(10))}")
        return "\n".join(lines)


@runtime_checkable
class LocalShellExecutor(Protocol):
    """Runs one command its ``policy`` allowed, against the session's files."""

    @property
    def policy(self) -> CommandPolicy: ...

    def run(
        self,
        command: str,
        *,
        filesystem: Filesystem | None,
        timeout_ms: int,
        max_output_length: int,
    ) -> CommandRun: ...


# --------------------------------------------------------------------------
# The shipped executor
# --------------------------------------------------------------------------


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker when it was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED


class ScratchExecutor:
    """Runs allow-listed programs in a scratch copy of the session's files.

    ``programs`` maps each allowed program name to the absolute path that is
    run (found on the host's ``PATH`` when not given); a name that does not
    resolve is refused at construction, so misconfiguration fails at startup.
    """

    def __init__(
        self,
        programs: Iterable[str] | Mapping[str, str],
        *,
        refused_patterns: Iterable[str] = (),
        max_file_bytes: int = 1_000_000,
    ) -> None:
        resolved: dict[str, str] = {}
        items = (
            programs.items()
            if isinstance(programs, Mapping)
            else ((name, None) for name in programs)
        )
        for name, path in items:
            found = path or shutil.which(name)
            if not found or not os.path.isabs(found) or not os.access(found, os.X_OK):
                raise PromptValidationError(
                    f"Program '{name}' cannot be run: it is not an executable "
                    "absolute path or on PATH."
                )
            resolved[name] = found
        self.programs: Mapping[str, str] = resolved
        self.max_file_bytes = max_file_bytes
        self._policy = CommandPolicy(
            allowed_programs=resolved, refused_patterns=refused_patterns
        )

    @property
    def policy(self) -> CommandPolicy:
        return self._policy

    def run(
        self,
        command: str,
        *,
        filesystem: Filesystem | None,
        timeout_ms: int,
        max_output_length: int,
    ) -> CommandRun:
        decision = self._policy.decide(command)  # whoever calls, it decides
        argv = list(decision.argv)
        program = self.programs.get(argv[0]) if argv else None
        if program is None or not decision.allowed:
            return CommandRun(
                command=command,
                outcome=CommandOutcome.denied(),
                policy=self._policy.name,
                reason=decision.reason or "the command is not allowed",
            )
        with tempfile.TemporaryDirectory(prefix="wink-shell-") as scratch:
            root = Path(scratch)
            before = _materialise(filesystem, root)
            stdout, stderr, code = _execute(
                program, argv, root, timeout_ms, max_output_length
            )
            if code is None:
                return CommandRun(
                    command=command,
                    stdout=cap(stdout, max_output_length),
                    stderr=cap(stderr, max_output_length),
                    outcome=CommandOutcome.timed_out(),
                )
            changed, deleted = _write_back(
                filesystem, root, before, self.max_file_bytes
            )
            return CommandRun(
                command=command,
                stdout=cap(stdout, max_output_length),
                stderr=cap(stderr, max_output_length),
                outcome=CommandOutcome.exited(code),
                changed_files=changed,
                deleted_files=deleted,
            )


class _Capped:
    """Reads a pipe to its end, keeping at most ``limit`` bytes (the rest is
    read and dropped, so a chatty program neither blocks nor fills memory)."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.data = bytearray()
        self.pipe = pipe
        self.limit = limit
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := self.pipe.read1(65_536):  # type: ignore[attr-defined]
                room = self.limit - len(self.data)
                if room > 0:
                    self.data += chunk[:room]

    def text(self) -> str:
        self.thread.join(timeout=1)
        return _decode(bytes(self.data))


def _execute(
    program: str, argv: list[str], cwd: Path, timeout_ms: int, max_output_length: int
) -> tuple[str, str, int | None]:
    """Run ``program`` (an absolute path) as ``argv`` with an empty environment,
    no stdin and no shell; its stdout, stderr and exit code (``None``: killed
    at the timeout). ``argv[0]`` stays the bare name, so messages read
    ``wc: ...``, not the host's path."""
    limit = max_output_length * 4 + 4  # enough bytes for the characters kept
    process = subprocess.Popen(  # allow-listed program, no shell
        argv,
        executable=program,
        cwd=cwd,
        env={},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    stdout = _Capped(process.stdout, limit)
    stderr = _Capped(process.stderr, limit)
    try:
        code: int | None = process.wait(timeout=timeout_ms / 1000)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.kill()
        process.wait()
        code = None
    try:
        return stdout.text(), stderr.text(), code
    finally:
        process.stdout.close()
        process.stderr.close()


def _decode(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def _materialise(filesystem: Filesystem | None, root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    if filesystem is None:
        return files
    for path in filesystem.list(""):
        target = root / path
        content = filesystem.read(path)
        try:
            if not target.resolve().is_relative_to(root.resolve()):
                continue  # a stored path that would leave the scratch directory
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8", errors="surrogatepass")
        except OSError:
            continue  # a path the host cannot hold ('a' beside 'a/b', too long)
        files[path] = content
    return files


def _write_back(
    filesystem: Filesystem | None,
    root: Path,
    before: Mapping[str, str],
    max_file_bytes: int,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Copy created and changed text files back; delete the removed ones.

    Symbolic links, binary files and files over ``max_file_bytes`` are not
    copied back (the filesystem holds text).
    """
    if filesystem is None:
        return (), ()
    after: dict[str, str] = {}
    present: set[str] = set()
    for entry in sorted(root.rglob("*")):
        name = entry.relative_to(root).as_posix()
        if entry.is_symlink() or entry.is_file():
            present.add(name)
        if entry.is_symlink() or not entry.is_file():
            continue
        if entry.stat().st_size > max_file_bytes:
            continue
        try:
            text = entry.read_text(encoding="utf-8")
            if normalise_path(name) != name:
                continue
        except (UnicodeDecodeError, OSError, ToolValidationError):
            continue
        if "\x00" in text:
            continue
        after[name] = text
    changed = tuple(
        path for path, text in sorted(after.items()) if before.get(path) != text
    )
    deleted = tuple(path for path in sorted(before) if path not in present)
    for path in changed:
        filesystem.write(path, after[path])
    for path in deleted:
        filesystem.delete(path)
    return changed, deleted


# --------------------------------------------------------------------------
# The local tool a shell_call runs through
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ShellAction:
    """A ``shell_call``'s action: the commands, run in order."""

    commands: tuple[str, ...]
    timeout_ms: int | None = None
    max_output_length: int | None = None

    def __post_init__(self) -> None:
        if not self.commands:
            raise ValueError("the shell call has no commands")
        if len(self.commands) > MAX_COMMANDS:
            raise ValueError(
                f"the shell call has {len(self.commands)} commands; the limit is "
                f"{MAX_COMMANDS}"
            )
        for name, value in (
            ("timeout_ms", self.timeout_ms),
            ("max_output_length", self.max_output_length),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive")


@dataclasses.dataclass(frozen=True, slots=True)
class ShellCallOutput:
    """What a local shell call produced: one run per command."""

    runs: tuple[CommandRun, ...]
    max_output_length: int

    def wire(self) -> list[dict[str, object]]:
        return [run.wire() for run in self.runs]

    def render(self) -> str:
        """The ``shell_call_output`` entries as JSON (what the model receives,
        and what a resumed run replays)."""
        return json.dumps(self.wire(), ensure_ascii=False)


def _limits(action: ShellAction) -> tuple[int, int]:
    timeout = min(action.timeout_ms or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
    output = min(action.max_output_length or DEFAULT_OUTPUT_LIMIT, MAX_OUTPUT_LIMIT)
    return timeout, output


def _within_deadline(timeout_ms: int, context: ToolContext) -> int:
    """``timeout_ms`` cut to what is left of the run's deadline (``<= 0``: no
    time is left)."""
    if context.deadline is None:
        return timeout_ms
    left = int(context.deadline.remaining().total_seconds() * 1000)
    return min(timeout_ms, left)


def local_shell_tool(
    name: str, description: str, executor: LocalShellExecutor
) -> Tool[ShellAction, ShellCallOutput]:
    """The local tool the adapter runs a local ``shell_call`` through: same
    name as the hosted shell tool, so the prompt's policies for it apply
    (and the executor's ``CommandPolicy`` after them). No command runs past
    the run's deadline: its timeout is cut to what is left."""

    def run_commands(
        params: ShellAction, *, context: ToolContext
    ) -> ToolResult[ShellCallOutput]:
        timeout_ms, limit = _limits(params)
        runs: list[CommandRun] = []
        for command in params.commands:
            context.beat()
            allowed_ms = _within_deadline(timeout_ms, context)
            if allowed_ms <= 0:
                run = CommandRun(
                    command=command,
                    stderr="Not run: the run's deadline passed.",
                    outcome=CommandOutcome.timed_out(),
                )
            else:
                run = executor.run(
                    command,
                    filesystem=context.filesystem,
                    timeout_ms=allowed_ms,
                    max_output_length=limit,
                )
            runs.append(dataclasses.replace(run, policy=executor.policy.name))
        return ToolResult(
            message="", value=ShellCallOutput(runs=tuple(runs), max_output_length=limit)
        )

    return Tool(
        name=name,
        description=description,
        handler=run_commands,
        params_type=ShellAction,
        result_type=ShellCallOutput,
    )


__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "DEFAULT_TIMEOUT_MS",
    "MAX_COMMANDS",
    "MAX_OUTPUT_LIMIT",
    "MAX_TIMEOUT_MS",
    "UNSAFE_OPTIONS",
    "CommandDecision",
    "CommandOutcome",
    "CommandPolicy",
    "CommandRun",
    "LocalShellExecutor",
    "ScratchExecutor",
    "ShellAction",
    "ShellCallOutput",
    "cap",
    "local_shell_tool",
]
