"""The local shell: the command policy and the scratch-directory executor."""

from __future__ import annotations

import json
import shutil
import time
from typing import Any

import pytest

from tests.limits import LATE_SECONDS
from tooling.runtime.errors import PromptValidationError
from tooling.runtime.local_shell import (
    TRUNCATED,
    CommandDecision,
    CommandOutcome,
    CommandPolicy,
    CommandRun,
    LocalShellExecutor,
    ScratchExecutor,
    ShellAction,
    ShellCallOutput,
)
from tooling.runtime.session import InMemoryFilesystem

POLICY = CommandPolicy(
    allowed_programs=("ls", "cat", "wc", "echo"), refused_patterns=(r"\bsecret\b",)
)


# -- the command policy --------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la",
        "wc -l notes.md",
        "cat 'a file.md'",
        "echo 'a | b; c > d'",
        "cat docs/a.md",
    ],
)
def test_allowed_commands(command: str) -> None:
    decision = POLICY.decide(command)
    assert decision.allowed, decision.reason
    assert decision.argv[0] == command.split()[0]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm -rf /", "program 'rm' is not allowed (allowed: cat, echo, ls, wc)"),
        ("/bin/ls", "program '/bin/ls' is not allowed"),
        ("ls | wc", "shell syntax"),
        ("ls; rm x", "shell syntax"),
        ("cat a > b", "shell syntax"),
        ("echo $(id)", "shell syntax"),
        ("echo `id`", "shell syntax"),
        ("cat *.md", "shell syntax"),
        ("ls && ls", "shell syntax"),
        ("ls\nrm x", "shell syntax"),
        ("cat /etc/passwd", "argument '/etc/passwd' leaves the working directory"),
        ("cat ../x", "argument '../x' leaves the working directory"),
        ("ls --dir=../..", "leaves the working directory"),
        ("cat secret", "matches refused pattern"),
        ("cat 'unclosed", "cannot be parsed"),
        ("", "the command is empty"),
        ("   ", "the command is empty"),
        ("ls \x00", "NUL or invalid characters"),
        ("ls \ud800", "NUL or invalid characters"),
        ("ls " + "a" * 20_000, "longer than 10000 characters"),
        (None, "not a string"),
        (["ls"], "not a string"),
    ],
)
def test_refused_commands(command: object, reason: str) -> None:
    decision = POLICY.decide(command)
    assert not decision.allowed
    assert reason in (decision.reason or "")


def test_the_policy_fails_closed_when_it_cannot_decide() -> None:
    class Broken(CommandPolicy):
        def _decide(self, command: object) -> CommandDecision:
            raise RuntimeError("boom")

    decision = Broken(allowed_programs=("ls",)).decide("ls")
    assert not decision.allowed
    assert decision.reason == "the command policy could not decide: boom"


def test_as_a_tool_policy_the_first_refused_command_denies_the_call() -> None:
    action = ShellAction(commands=("ls", "rm x", "cat y"))
    decision = POLICY.check(None, action, context=None)  # type: ignore[arg-type]
    assert not decision.allowed
    assert decision.reason == (
        "Command 2 ('rm x') refused: program 'rm' is not allowed "
        "(allowed: cat, echo, ls, wc)."
    )
    allowed = POLICY.check(None, ShellAction(commands=("ls",)), context=None)  # type: ignore[arg-type]
    assert allowed.allowed
    cannot = POLICY.check(None, object(), context=None)  # type: ignore[arg-type]
    assert not cannot.allowed and "names no commands" in (cannot.reason or "")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"allowed_programs": ("/bin/ls",)}, "bare program name"),
        ({"allowed_programs": ("",)}, "bare program name"),
        ({"allowed_programs": ("ls",), "refused_patterns": ("(",)}, "not a regular"),
    ],
)
def test_policy_configuration_is_checked(kwargs: dict, match: str) -> None:
    with pytest.raises(PromptValidationError, match=match):
        CommandPolicy(**kwargs)


# -- the shell action --------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"commands": ()}, "no commands"),
        ({"commands": ("ls",) * 21}, "the limit is 20"),
        ({"commands": ("ls",), "timeout_ms": 0}, "timeout_ms must be positive"),
        ({"commands": ("ls",), "max_output_length": -1}, "must be positive"),
    ],
)
def test_shell_action_limits(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ShellAction(**kwargs)


def test_outcomes_on_the_wire() -> None:
    assert CommandOutcome.exited(3).wire() == {"type": "exit", "exit_code": 3}
    assert CommandOutcome.timed_out().wire() == {"type": "timeout"}
    assert CommandOutcome.denied().wire() == {"type": "exit", "exit_code": 126}
    refused = CommandRun("rm x", outcome=CommandOutcome.denied(), reason="no rm")
    assert refused.wire()["stderr"] == "Command refused: no rm"
    output = ShellCallOutput(
        runs=(CommandRun("ls", stdout="a\n"),), max_output_length=9
    )
    assert json.loads(output.render()) == [
        {"stdout": "a\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
    ]


# -- the scratch executor ------------------------------------------------------------

needs_coreutils = pytest.mark.skipif(
    not all(shutil.which(p) for p in ("ls", "cat", "cp", "rm", "tail", "env", "yes")),
    reason="coreutils not on PATH",
)


def _executor(*programs: str) -> ScratchExecutor:
    return ScratchExecutor(programs)


def _run(
    executor: ScratchExecutor, command: str, fs: InMemoryFilesystem, **kw: int
) -> CommandRun:
    return executor.run(
        command,
        filesystem=fs,
        timeout_ms=kw.get("timeout_ms", 5_000),
        max_output_length=kw.get("max_output_length", 10_000),
    )


@needs_coreutils
def test_programs_run_in_a_scratch_copy_of_the_session_files() -> None:
    fs = InMemoryFilesystem({"notes.md": "# Notes\n", "docs/a.md": "a\n"})
    executor = _executor("ls", "cat")
    assert isinstance(executor, LocalShellExecutor)

    listing = _run(executor, "ls -R", fs)
    shown = _run(executor, "cat docs/a.md", fs)

    assert listing.outcome == CommandOutcome.exited(0)
    assert "notes.md" in listing.stdout and "a.md" in listing.stdout
    assert shown.stdout == "a\n"
    assert fs.files == {"notes.md": "# Notes\n", "docs/a.md": "a\n"}


@needs_coreutils
def test_the_environment_is_empty() -> None:
    run = _run(_executor("env"), "env", InMemoryFilesystem())
    assert (run.stdout, run.outcome) == ("", CommandOutcome.exited(0))


@needs_coreutils
def test_a_failing_command_reports_its_exit_code_and_stderr() -> None:
    run = _run(_executor("cat"), "cat missing.md", InMemoryFilesystem())
    assert run.outcome == CommandOutcome.exited(1)
    assert "missing.md" in run.stderr


@needs_coreutils
def test_a_command_that_runs_too_long_times_out() -> None:
    fs = InMemoryFilesystem({"notes.md": "x\n"})
    started = time.monotonic()
    run = _run(_executor("tail"), "tail -F notes.md", fs, timeout_ms=300)
    assert run.outcome == CommandOutcome.timed_out()
    assert time.monotonic() - started < LATE_SECONDS  # tail -F never ends
    assert run.wire()["outcome"] == {"type": "timeout"}


@needs_coreutils
def test_output_is_capped() -> None:
    fs = InMemoryFilesystem({"big.txt": "y\n" * 50_000})
    run = _run(_executor("cat"), "cat big.txt", fs, max_output_length=100)
    assert run.stdout == "y\n" * 50 + TRUNCATED


@needs_coreutils
def test_created_changed_and_deleted_files_are_written_back() -> None:
    fs = InMemoryFilesystem({"a.txt": "a\n", "old.txt": "old\n"})
    executor = _executor("cp", "rm")

    copied = _run(executor, "cp a.txt docs_b.txt", fs)
    removed = _run(executor, "rm old.txt", fs)

    assert copied.changed_files == ("docs_b.txt",)
    assert removed.deleted_files == ("old.txt",)
    assert fs.files == {"a.txt": "a\n", "docs_b.txt": "a\n"}


@needs_coreutils
def test_binary_files_are_not_written_back_nor_taken_for_deleted() -> None:
    fs = InMemoryFilesystem({"a.txt": "a\n"})
    # ``yes`` never ends: the output is cut by the timeout, nothing is written
    run = _run(_executor("yes"), "yes", fs, timeout_ms=200, max_output_length=10)
    assert run.outcome == CommandOutcome.timed_out()
    assert run.stdout.startswith("y\ny\n") and run.stdout.endswith(TRUNCATED)
    assert fs.files == {"a.txt": "a\n"}


def test_a_program_that_does_not_resolve_is_refused_at_construction() -> None:
    with pytest.raises(PromptValidationError, match="Program 'no-such-program-x'"):
        ScratchExecutor(["no-such-program-x"])
    with pytest.raises(PromptValidationError, match="Program 'ls'"):
        ScratchExecutor({"ls": "relative/ls"})


@needs_coreutils
def test_the_executor_refuses_programs_it_was_not_given() -> None:
    run = _run(_executor("ls"), "cat x", InMemoryFilesystem())
    assert run.outcome == CommandOutcome.denied()
    assert run.reason == "program 'cat' is not allowed (allowed: ls)"


@needs_coreutils
def test_the_executor_policy_allows_exactly_its_programs() -> None:
    executor = ScratchExecutor(["ls", "cat"], refused_patterns=[r"\.env\b"])
    assert executor.policy.allowed_programs == frozenset({"ls", "cat"})
    assert not executor.policy.decide("cat .env").allowed
    assert executor.policy.decide("cat notes.md").allowed


@needs_coreutils
def test_a_stored_path_that_would_leave_the_scratch_directory_is_not_copied(
    tmp_path: Any,
) -> None:
    outside = tmp_path / "escape.txt"
    fs = InMemoryFilesystem({f"../../../../../../..{outside}": "x\n", "a.txt": "a\n"})
    run = _run(_executor("ls"), "ls", fs)
    assert run.stdout == "a.txt\n"
    assert not outside.exists()


def test_the_model_cannot_raise_the_limits_past_the_caps() -> None:
    from tooling.runtime.local_shell import MAX_OUTPUT_LIMIT, MAX_TIMEOUT_MS, _limits

    action = ShellAction(commands=("ls",), timeout_ms=10**9, max_output_length=10**9)
    assert _limits(action) == (MAX_TIMEOUT_MS, MAX_OUTPUT_LIMIT)
    assert _limits(ShellAction(commands=("ls",))) == (10_000, 16_384)
