"""The local shell under hostile commands: option injection that would read,
write or run things outside the scratch directory, and session files the
scratch directory cannot hold."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.limits import LATE_SECONDS
from tooling.runtime.local_shell import (
    CommandOutcome,
    CommandPolicy,
    CommandRun,
    ScratchExecutor,
)
from tooling.runtime.session import InMemoryFilesystem

needs_coreutils = pytest.mark.skipif(
    not all(shutil.which(p) for p in ("sort", "wc", "cat", "ls")),
    reason="coreutils not on PATH",
)

POLICY = CommandPolicy(allowed_programs=("sort", "wc", "cat", "ls", "tail", "head"))


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        # an option's attached value is a path like any other argument
        ("sort -o/tmp/x notes.md", "leaves the working directory"),
        ("sort -ro/tmp/x notes.md", "leaves the working directory"),
        ("head -n1 -- ../x", "leaves the working directory"),
        ("cat -A/etc/passwd", "leaves the working directory"),
        # options that read file names from a file, run a program or write
        ("wc --files0-from=list", "option '--files0-from' is not allowed"),
        ("wc --files0-from list", "option '--files0-from' is not allowed"),
        ("wc --f=list", "option '--files0-from' is not allowed"),
        ("wc '--files0-from=list'", "option '--files0-from' is not allowed"),
        ("wc --fil''es0-from=list", "option '--files0-from' is not allowed"),
        ("sort --files0-from=list", "option '--files0-from' is not allowed"),
        ("sort --compress-program=sh big", "option '--compress-program' is not"),
        ("sort --com=sh big", "option '--compress-program' is not allowed"),
        ("sort -o notes.md list", "option '-o' is not allowed"),
        ("sort -ro notes.md list", "option '-o' is not allowed"),
        ("sort --output=notes.md list", "option '--output' is not allowed"),
        ("sort --out notes.md list", "option '--output' is not allowed"),
    ],
)
def test_option_injection_is_refused(command: str, reason: str) -> None:
    decision = POLICY.decide(command)
    assert not decision.allowed
    assert reason in (decision.reason or "")


@pytest.mark.parametrize(
    "command",
    [
        "sort -r notes.md",
        "sort -k2 -t, data.csv",
        "sort --reverse notes.md",
        "wc -l notes.md",
        "wc --lines notes.md",
        "head -n 5 notes.md",
        "tail -n+2 notes.md",
        "ls -la docs",
        "cat -- -odd-name",
        # another program's '-o' or '--output' is not sort's
        "head -c5 notes.md",
    ],
)
def test_ordinary_options_stay_allowed(command: str) -> None:
    decision = POLICY.decide(command)
    assert decision.allowed, decision.reason


def _run(executor: ScratchExecutor, command: str, fs: InMemoryFilesystem) -> CommandRun:
    return executor.run(command, filesystem=fs, timeout_ms=3_000, max_output_length=500)


@needs_coreutils
def test_the_executor_decides_each_command_itself(tmp_path: Path) -> None:
    """Whoever calls ``run`` directly, the executor's policy still decides."""
    outside = tmp_path / "written.txt"
    executor = ScratchExecutor(["sort", "wc"])
    fs = InMemoryFilesystem({"list": "/etc/hostname", "notes.md": "b\na\n"})

    written = _run(executor, f"sort -o{outside} notes.md", fs)
    listed = _run(executor, "sort --files0-from=list", fs)
    counted = _run(executor, "wc --files0-from=list", fs)

    assert not outside.exists()
    for run in (written, listed, counted):
        assert run.outcome == CommandOutcome.denied(), run
        assert run.policy == "command_policy" and run.reason
        assert run.stdout == ""
    assert fs.files == {"list": "/etc/hostname", "notes.md": "b\na\n"}


@needs_coreutils
def test_sort_cannot_run_a_compress_program(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = f"echo pwned > {marker}\n" * 20_000
    executor = ScratchExecutor(["sort"])
    run = _run(
        executor,
        "sort -S 1k --compress-program=sh cmds",
        InMemoryFilesystem({"cmds": script}),
    )
    assert run.outcome == CommandOutcome.denied()
    assert not marker.exists()


@needs_coreutils
def test_session_files_the_scratch_directory_cannot_hold_are_skipped() -> None:
    """A flat store may hold both 'a' and 'a/b', or a name too long for the
    host's filesystem: the command still runs, without those files, and they
    are neither changed nor taken for deleted."""
    files = {"a": "file\n", "a/b": "nested\n", "é" * 200: "long\n", "ok.txt": "ok\n"}
    fs = InMemoryFilesystem(dict(files))

    run = _run(ScratchExecutor(["cat"]), "cat ok.txt", fs)

    assert run.outcome == CommandOutcome.exited(0), run
    assert run.stdout == "ok\n"
    assert (run.changed_files, run.deleted_files) == ((), ())
    assert fs.files == files


def test_the_shipped_scratch_executor_refuses_the_unsafe_options() -> None:
    from tooling import shell_executors

    policy: Any = shell_executors.get("scratch").policy
    for command in ("sort --files0-from=l", "wc --files0-from=l", "sort -o x y"):
        if command.split()[0] in policy.allowed_programs:
            assert not policy.decide(command).allowed, command


@needs_coreutils
def test_commands_do_not_run_past_the_runs_deadline() -> None:
    """Each command's timeout is cut to what is left of the run's deadline, and
    a command left with no time is reported as timed out without running: 20
    commands of 120 s each cannot hold a worker for 40 minutes."""
    from tooling.runtime.context import ToolContext
    from tooling.runtime.deadlines import Deadline
    from tooling.runtime.local_shell import ShellAction, local_shell_tool
    from tooling.runtime.session import InMemorySession

    if not shutil.which("tail"):
        pytest.skip("no tail")
    tool = local_shell_tool("shell", "Run commands.", ScratchExecutor(["tail"]))
    session = InMemorySession(filesystem=InMemoryFilesystem({"notes.md": "x\n"}))
    context = ToolContext(
        prompt=None,  # type: ignore[arg-type]
        rendered_prompt=None,
        adapter=None,
        session=session,
        deadline=Deadline.after(0.5),
    )
    action = ShellAction(commands=("tail -F notes.md",) * 3, timeout_ms=120_000)
    started = time.monotonic()

    assert tool.handler is not None
    result = tool.handler(action, context=context)

    assert time.monotonic() - started < LATE_SECONDS  # tail -F never ends
    assert result.value is not None
    runs = result.value.runs
    assert [run.outcome for run in runs] == [CommandOutcome.timed_out()] * 3
    assert runs[1].stderr == runs[2].stderr == "Not run: the run's deadline passed."


def test_files_under_a_symlinked_directory_are_not_written_back(tmp_path: Path) -> None:
    """A program an operator allows might link a directory outside the scratch
    directory into it; nothing under that link is copied into the session."""
    from tooling.runtime.local_shell import _write_back

    outside = tmp_path / "host"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret\n")
    root = tmp_path / "scratch"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "hostlink").symlink_to(outside, target_is_directory=True)
    fs = InMemoryFilesystem({"a.txt": "a\n"})

    changed, deleted = _write_back(fs, root, {"a.txt": "a\n"}, 1_000_000)

    assert (changed, deleted) == ((), ())
    assert fs.files == {"a.txt": "a\n"}
