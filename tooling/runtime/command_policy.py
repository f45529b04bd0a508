"""``CommandPolicy``: which commands a local shell may run, decided before any
runs, fail-closed.

A command is one program and its arguments (no shell syntax: no pipes, globs,
redirections or substitutions). The policy allows a program only from its
allow-list, refuses the patterns and options the operator names and the
built-in ``UNSAFE_OPTIONS`` (in every spelling), and refuses any argument that
would reach outside the working directory (absolute paths, ``..``). Its
decisions are recorded like any tool policy's (``local_shell.py`` runs what it
allows).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from .errors import PromptValidationError
from .policies import PolicyDecision
from .text import shortened

if TYPE_CHECKING:
    from .context import ToolContext
    from .results import ToolResult
    from .tools import Tool

MAX_COMMAND_LENGTH: Final = 10_000

# Options of common programs that would reach past the working directory
# whatever their value: they read file names from a file (any host path), run
# another program, or write a file. Every ``CommandPolicy`` refuses them, in
# any spelling (``--files0-from=x``, ``--fil x``, ``-ro x``), besides those
# the operator adds.
UNSAFE_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "du": ("--files0-from",),
        "wc": ("--files0-from",),
        "sort": ("--compress-program", "--files0-from", "--output", "-o"),
    }
)


@dataclasses.dataclass(frozen=True, slots=True)
class CommandDecision:
    allowed: bool
    reason: str | None = None
    argv: tuple[str, ...] = ()


_SHELL_SYNTAX = re.compile(r"[|&;<>`$(){}\n\r*?~!]")


class CommandPolicy:
    """Decides each local shell command, fail-closed.

    A command is split like a POSIX shell would (``shlex``), but never given to
    a shell: any shell syntax (pipes, redirections, substitutions, globs,
    several commands) is refused. Its program must be a bare name in
    ``allowed_programs``; no argument may match a ``refused_patterns``
    expression (searched in the whole command); arguments may not be absolute
    paths or climb out of the scratch directory with ``..`` (nor carry a path
    glued to a short option, ``-o/etc/x``); a program's ``UNSAFE_OPTIONS`` and
    the ``refused_options`` given (program -> option spellings) are refused,
    long ones in every abbreviation.
    """

    def __init__(
        self,
        *,
        allowed_programs: Iterable[str],
        refused_patterns: Iterable[str] = (),
        refused_options: Mapping[str, Iterable[str]] | None = None,
        name: str = "command_policy",
    ) -> None:
        self.name = name
        options = {program: set(names) for program, names in UNSAFE_OPTIONS.items()}
        for program, names in (refused_options or {}).items():
            options.setdefault(program, set()).update(names)
        for names in options.values():
            for option in names:
                if not re.fullmatch(r"--[A-Za-z0-9][A-Za-z0-9-]*|-[A-Za-z0-9]", option):
                    raise PromptValidationError(
                        f"Refused option {option!r} must be spelled '--name' or '-x'."
                    )
        self.refused_options: Mapping[str, frozenset[str]] = {
            program: frozenset(names) for program, names in options.items()
        }
        self.allowed_programs = frozenset(allowed_programs)
        for program in self.allowed_programs:
            if not program or "/" in program or program != program.strip():
                raise PromptValidationError(
                    f"Allowed program {program!r} must be a bare program name."
                )
        patterns: list[re.Pattern[str]] = []
        for pattern in refused_patterns:
            try:
                patterns.append(re.compile(pattern))
            except re.error as error:
                raise PromptValidationError(
                    f"Refused pattern {pattern!r} is not a regular expression: {error}"
                ) from error
        self.refused_patterns = tuple(patterns)

    def referenced_tools(self) -> frozenset[str]:
        return frozenset()

    def check(
        self, tool: Tool[Any, Any], params: Any, *, context: ToolContext
    ) -> PolicyDecision:
        """Every command of a local shell call must be allowed; the first
        refused one denies the whole call (nothing of it runs)."""
        commands = getattr(params, "commands", None)
        if not isinstance(commands, tuple | list) or not commands:
            return PolicyDecision.deny(
                f"Policy '{self.name}' cannot decide: the call names no commands."
            )
        for position, command in enumerate(commands, start=1):
            decision = self.decide(command)
            if not decision.allowed:
                return PolicyDecision.deny(
                    f"Command {position} ({shortened(str(command))!r}) refused: "
                    f"{decision.reason}."
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
        return None

    def decide(self, command: object) -> CommandDecision:
        try:
            return self._decide(command)
        except Exception as error:  # fail closed
            return CommandDecision(
                False, f"the command policy could not decide: {error}"
            )

    def _decide(self, command: object) -> CommandDecision:
        if not isinstance(command, str):
            return CommandDecision(False, "the command is not a string")
        if not command.strip():
            return CommandDecision(False, "the command is empty")
        if len(command) > MAX_COMMAND_LENGTH:
            return CommandDecision(
                False, f"the command is longer than {MAX_COMMAND_LENGTH} characters"
            )
        if "\x00" in command or any(0xD800 <= ord(c) <= 0xDFFF for c in command):
            return CommandDecision(False, "the command holds NUL or invalid characters")
        for pattern in self.refused_patterns:
            if pattern.search(command):
                return CommandDecision(
                    False, f"the command matches refused pattern '{pattern.pattern}'"
                )
        try:
            argv = shlex.split(command, posix=True)
        except ValueError as error:
            return CommandDecision(False, f"the command cannot be parsed: {error}")
        stripped = _strip_quoted(command)
        if _SHELL_SYNTAX.search(stripped):
            return CommandDecision(
                False,
                "shell syntax (pipes, redirections, substitutions, globs, several "
                "commands) is not run; send one program and its arguments",
            )
        program = argv[0]
        if program not in self.allowed_programs:
            allowed = ", ".join(sorted(self.allowed_programs)) or "none"
            return CommandDecision(
                False,
                f"program '{shortened(program)}' is not allowed (allowed: {allowed})",
            )
        refused = self.refused_options.get(program, frozenset())
        for argument in argv[1:]:
            if _escapes(argument):
                return CommandDecision(
                    False,
                    f"argument '{shortened(argument)}' leaves the working directory",
                )
            option = _refused_option(argument, refused)
            if option is not None:
                return CommandDecision(
                    False,
                    f"option '{option}' is not allowed for {program} (it reads, "
                    "writes or runs things beyond the files named)",
                )
        return CommandDecision(True, None, tuple(argv))


def _strip_quoted(command: str) -> str:
    """``command`` without its single- and double-quoted parts."""
    return re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", "''", command)


def _escapes(argument: str) -> bool:
    value = argument
    if argument.startswith("--"):  # a long option: only its '=value' names a path
        value = argument.split("=", 1)[1] if "=" in argument else ""
    elif argument.startswith("-") and len(argument) > 1:
        # short options may carry a value glued on ('-o/etc/x', '-T..'): where
        # it starts is unknown, so no '/' or '..' anywhere
        attached = argument[1:].replace("\\", "/")
        return "/" in attached or ".." in attached
    if value.startswith("/"):
        return True
    return ".." in value.replace("\\", "/").split("/")


def _refused_option(argument: str, refused: frozenset[str]) -> str | None:
    """The refused option ``argument`` spells, if any: a long option in any
    abbreviation getopt accepts, a short one anywhere in a cluster."""
    if argument.startswith("--") and len(argument) > 2:
        name = argument[2:].split("=", 1)[0]
        return next(
            (o for o in sorted(refused) if o.startswith("--" + name)),
            None,
        )
    if argument.startswith("-") and len(argument) > 1:
        letters = argument[1:]
        return next(
            (o for o in sorted(refused) if len(o) == 2 and o[1] in letters),
            None,
        )
    return None
